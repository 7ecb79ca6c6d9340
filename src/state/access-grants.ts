/**
 * pmsync.access_grants: the roles `pmsync grant` gave read access to the
 * analysts' tables, the sources each may see (null: every source), and
 * whether pmsync created the role.
 */
import type { Queryable } from '../db/pool.ts';

export interface AccessGrant {
  role: string;
  /** The sources whose rows the role sees; null for every source. */
  sources: string[] | null;
  createdRole: boolean;
}

export async function listGrants(db: Queryable): Promise<AccessGrant[]> {
  const res = await db.query<{ role: string; sources: string[] | null; created_role: boolean }>(
    'SELECT role, sources, created_role FROM pmsync.access_grants ORDER BY role',
  );
  return res.rows.map((r) => ({ role: r.role, sources: r.sources, createdRole: r.created_role }));
}

/** Records a grant; a role pmsync created stays marked as such when its grant changes. */
export async function saveGrant(db: Queryable, grant: AccessGrant): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.access_grants AS g (role, sources, created_role) VALUES ($1, $2, $3)
     ON CONFLICT (role) DO UPDATE SET sources = excluded.sources, created_role = g.created_role OR excluded.created_role, granted_at = now()`,
    [grant.role, grant.sources, grant.createdRole],
  );
}

export async function forgetGrant(db: Queryable, role: string): Promise<AccessGrant | null> {
  const res = await db.query<{ role: string; sources: string[] | null; created_role: boolean }>(
    'DELETE FROM pmsync.access_grants WHERE role = $1 RETURNING role, sources, created_role',
    [role],
  );
  const r = res.rows[0];
  return r ? { role: r.role, sources: r.sources, createdRole: r.created_role } : null;
}
