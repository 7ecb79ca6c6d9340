/**
 * Records that fail validation are set aside here with their reason, instead of
 * failing their page. A later valid copy of the same record removes its entry.
 */
import type { Queryable } from '../db/pool.ts';

export interface Rejected {
  recordId: string | null;
  raw: unknown;
  reason: string;
}

export async function quarantine(
  db: Queryable,
  source: string,
  resource: string,
  runId: number | null,
  rejected: Rejected[],
): Promise<void> {
  if (rejected.length === 0) return;
  await db.query(
    `INSERT INTO pmsync.quarantine AS q (source, resource, record_id, raw, reason, run_id)
     SELECT $1, $2, r.record_id, r.raw, r.reason, $3 FROM jsonb_to_recordset($4::jsonb) AS r(record_id text, raw jsonb, reason text)
     ON CONFLICT (source, resource, record_id) DO UPDATE SET raw = excluded.raw, reason = excluded.reason, run_id = excluded.run_id, last_seen_at = now()`,
    [source, resource, runId, JSON.stringify(rejected.map((r) => ({ record_id: r.recordId, raw: r.raw ?? null, reason: r.reason })))],
  );
}

export async function clearQuarantine(db: Queryable, source: string, resource: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const res = await db.query('DELETE FROM pmsync.quarantine WHERE source = $1 AND resource = $2 AND record_id = ANY($3::text[])', [
    source,
    resource,
    ids,
  ]);
  return res.rowCount ?? 0;
}
