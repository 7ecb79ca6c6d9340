/**
 * Records that fail validation are set aside here with their reason, instead of
 * failing their page. A later valid copy of the same record removes its entry.
 *
 * Whatever a server sent, the entry must be storable: a raw record, id or
 * reason holding a NUL or an unpaired surrogate would fail this insert and
 * with it the page's transaction, so the page's good rows would never land and
 * the stream would fail on that page on every run. Such characters are written
 * out as visible `\uXXXX` escapes (src/db/storable.ts); the reason says so.
 */
import type { Queryable } from '../db/pool.ts';
import { storableJson, storableText } from '../db/storable.ts';

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
  // One entry per id: ON CONFLICT cannot update the same row twice in one statement.
  const byId = new Map<string, { record_id: string; raw: unknown; reason: string }>();
  const anonymous: Array<{ record_id: null; raw: unknown; reason: string }> = [];
  for (const r of rejected) {
    const entry = { raw: storableJson(r.raw ?? null), reason: storableText(r.reason) };
    if (r.recordId === null) anonymous.push({ record_id: null, ...entry });
    else byId.set(storableText(r.recordId), { record_id: storableText(r.recordId), ...entry });
  }
  await db.query(
    `INSERT INTO pmsync.quarantine AS q (source, resource, record_id, raw, reason, run_id)
     SELECT $1, $2, r.record_id, r.raw, r.reason, $3 FROM jsonb_to_recordset($4::jsonb) AS r(record_id text, raw jsonb, reason text)
     ON CONFLICT (source, resource, record_id) DO UPDATE SET raw = excluded.raw, reason = excluded.reason, run_id = excluded.run_id, last_seen_at = now()`,
    [source, resource, runId, JSON.stringify([...byId.values(), ...anonymous])],
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

/** Records set aside per source and resource, for the /metrics gauge. */
export async function quarantineCounts(db: Queryable): Promise<Array<{ source: string; resource: string; count: number }>> {
  const res = await db.query<{ source: string; resource: string; n: number }>(
    'SELECT source, resource, count(*)::int AS n FROM pmsync.quarantine GROUP BY 1, 2',
  );
  return res.rows.map((r) => ({ source: r.source, resource: r.resource, count: r.n }));
}

/** Records of a stream set aside so far. */
export async function countQuarantined(db: Queryable, source: string, resource: string): Promise<number> {
  const res = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pmsync.quarantine WHERE source = $1 AND resource = $2', [
    source,
    resource,
  ]);
  return res.rows[0]?.n ?? 0;
}
