/**
 * Read access that PostgreSQL enforces, for `pmsync grant`: SELECT on the
 * analysts' tables, their history tables and pmsync's views, never on
 * `pmsync.*` (run details, drift samples, webhook events), and row-level
 * security so that a role restricted to some sources sees only their rows.
 *
 * - Every resource and history table has row-level security enabled (not
 *   forced: its owner, pmsync's own role, writes past the policies by design)
 *   and one SELECT policy per granted role: `source = ANY(its sources)`, or
 *   `true` for a role granted every source.
 * - pmsync's views are switched to `security_invoker` (PostgreSQL 15 and
 *   later), so they read the tables with the reader's rights and policies; a
 *   view runs with its owner's rights otherwise and would show every row.
 * - The freshness view (pmsync_freshness) reads pmsync's bookkeeping, so it
 *   keeps its owner's rights and filters its rows itself: a role sees the
 *   sources its grants (pmsync.access_grants) name.
 * - With row-level security on, a role that reads the tables without a
 *   policy sees no rows: a role granted SELECT outside pmsync needs a
 *   `pmsync grant --role` of its own (the command names such roles).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { PmsyncError } from '../errors.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';

/** The views the migrations create for analysts (20261122120000_schedules_and_analyst_views). */
export const ANALYST_VIEWS = ['membership_details', 'customer_overview', 'appointments_per_company_day'] as const;

/** The freshness view: runs with its owner's rights and shows each role the sources granted to it. */
export const FRESHNESS_VIEW = 'pmsync_freshness';

export interface Relations {
  /** Resource and history tables that exist, in schema public. */
  tables: string[];
  /** pmsync's views that exist, in schema public. */
  views: string[];
  /** Whether the freshness view exists (a database the migrations have not reached yet lacks it). */
  freshness?: boolean;
}

const q = (name: string) => pg.escapeIdentifier(name);
const table = (name: string) => `"public".${q(name)}`;

/** The policy a role reads through; a name PostgreSQL keeps whole (at most 63 bytes). */
export function policyName(role: string): string {
  const name = `pmsync_read_${role}`;
  if (Buffer.byteLength(name) <= 63) return name;
  return `pmsync_read_${createHash('sha256').update(role).digest('hex').slice(0, 32)}`;
}

/** Pure: what gives `role` read access to `relations`, limited to `sources` (null: every source). */
export function grantStatements(role: string, sources: string[] | null, relations: Relations): string[] {
  const r = q(role);
  const using = sources === null ? 'true' : `source = ANY (${pg.escapeLiteral(`{${sources.map((s) => `"${s}"`).join(',')}}`)}::text[])`;
  const out = [`GRANT USAGE ON SCHEMA "public" TO ${r}`];
  for (const t of relations.tables) {
    out.push(
      `ALTER TABLE ${table(t)} ENABLE ROW LEVEL SECURITY`,
      `DROP POLICY IF EXISTS ${q(policyName(role))} ON ${table(t)}`,
      `CREATE POLICY ${q(policyName(role))} ON ${table(t)} FOR SELECT TO ${r} USING (${using})`,
      `GRANT SELECT ON ${table(t)} TO ${r}`,
    );
  }
  for (const v of relations.views) out.push(`ALTER VIEW ${table(v)} SET (security_invoker = true)`, `GRANT SELECT ON ${table(v)} TO ${r}`);
  if (relations.freshness) out.push(`GRANT SELECT ON ${table(FRESHNESS_VIEW)} TO ${r}`);
  return out;
}

/** Pure: what takes back everything grantStatements gave. */
export function revokeStatements(role: string, relations: Relations): string[] {
  const r = q(role);
  const out: string[] = [];
  for (const t of relations.tables)
    out.push(`DROP POLICY IF EXISTS ${q(policyName(role))} ON ${table(t)}`, `REVOKE SELECT ON ${table(t)} FROM ${r}`);
  for (const v of relations.views) out.push(`REVOKE SELECT ON ${table(v)} FROM ${r}`);
  if (relations.freshness) out.push(`REVOKE SELECT ON ${table(FRESHNESS_VIEW)} FROM ${r}`);
  return out;
}

/** The tables (with their history tables) and pmsync's views that exist now. */
export async function existingRelations(db: Queryable, resourceTables: string[]): Promise<Relations> {
  const wanted = [...resourceTables, ...resourceTables.map((t) => `${t}_history`)];
  const res = await db.query<{ relname: string; relkind: string }>(
    `SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'v')`,
    [[...wanted, ...ANALYST_VIEWS, FRESHNESS_VIEW]],
  );
  const found = new Map(res.rows.map((r) => [r.relname, r.relkind]));
  return {
    tables: wanted.filter((t) => found.get(t) === 'r' || found.get(t) === 'p'),
    views: ANALYST_VIEWS.filter((v) => found.get(v) === 'v'),
    freshness: found.get(FRESHNESS_VIEW) === 'v',
  };
}

export interface RoleInfo {
  exists: boolean;
  /** A superuser or a role with BYPASSRLS: row-level security cannot restrict it. */
  bypassesRls: boolean;
}

export async function roleInfo(db: Queryable, role: string): Promise<RoleInfo> {
  const res = await db.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
    'SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1',
    [role],
  );
  const r = res.rows[0];
  return { exists: r !== undefined, bypassesRls: r ? r.rolsuper || r.rolbypassrls : false };
}

/** Roles other than `except` that may SELECT from one of the tables but have no pmsync policy on it. */
export async function unmanagedReaders(db: Queryable, relations: Relations, except: string[]): Promise<string[]> {
  if (relations.tables.length === 0) return [];
  const res = await db.query<{ grantee: string }>(
    `SELECT DISTINCT grantee FROM information_schema.role_table_grants
     WHERE table_schema = 'public' AND table_name = ANY($1::text[]) AND privilege_type = 'SELECT'
       AND grantee <> ALL($2::text[]) AND grantee <> 'PUBLIC'
       AND grantee NOT IN (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY($1::text[]))
     ORDER BY grantee`,
    [relations.tables, except],
  );
  return res.rows.map((r) => r.grantee);
}

/** Runs statements in one transaction, waiting at most `lockSeconds` for a table a sync is writing. */
export async function applyStatements(db: Pool, statements: string[], lockSeconds = 30): Promise<void> {
  try {
    await withTransaction(db, async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '${Math.max(1, Math.floor(lockSeconds))}s'`);
      for (const sql of statements) await tx.query(sql);
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '55P03') {
      throw new PmsyncError(
        'LOCKED',
        `A table stayed locked for ${lockSeconds} s (a sync writing it?): nothing was changed; run the grant again.`,
        {
          cause: err,
        },
      );
    }
    if (code === '42501') {
      throw new PmsyncError(
        'USAGE',
        `The database user pmsync connects as may not change these privileges (${(err as Error).message}): run the grant as the tables' owner or a role with CREATEROLE.`,
        { cause: err },
      );
    }
    throw err;
  }
}
