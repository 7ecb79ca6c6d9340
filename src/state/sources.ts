/** The sources the database holds data of, whether or not they are configured now. */
import type { Queryable } from '../db/pool.ts';

export interface StoredSource {
  source: string;
  /** Streams with a checkpoint or a run. */
  streams: number;
  /** Start of its latest run; null when it has checkpoints but no run history. */
  lastRunAt: Date | null;
}

export async function storedSources(db: Queryable): Promise<StoredSource[]> {
  const res = await db.query<{ source: string; streams: number; last_run_at: Date | null }>(
    `SELECT source, count(DISTINCT resource)::int AS streams, max(started_at) AS last_run_at FROM (
       SELECT source, resource, started_at FROM pmsync.runs
       UNION ALL SELECT source, resource, NULL FROM pmsync.sync_state
     ) s GROUP BY source ORDER BY max(started_at) DESC NULLS LAST, source`,
  );
  return res.rows.map((r) => ({ source: r.source, streams: r.streams, lastRunAt: r.last_run_at }));
}

/**
 * Forgets where a source's streams stand, the tables it keeps history of, and
 * its quarantined records, so its next sync starts from scratch. Runs are kept
 * as the record of what happened; stream rows are the caller's (deleteSourceRows).
 */
export async function forgetSource(db: Queryable, source: string): Promise<void> {
  await db.query('DELETE FROM pmsync.history_tables WHERE source = $1', [source]);
  await db.query('DELETE FROM pmsync.sync_state WHERE source = $1', [source]);
  await db.query('DELETE FROM pmsync.quarantine WHERE source = $1', [source]);
}
