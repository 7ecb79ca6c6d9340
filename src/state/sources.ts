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
