/** Run history in pmsync.runs: one row per run of one stream for one source. */
import type { Queryable } from '../db/pool.ts';
import { storableText } from '../db/storable.ts';
import type { PageTotals } from '../sync/types.ts';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'quota_exhausted' | 'interrupted';

export async function startRun(
  db: Queryable,
  run: { source: string; resource: string; mode: string; purpose?: string | null; windowStart: Date | null; windowEnd: Date | null },
): Promise<number> {
  const res = await db.query<{ id: number }>(
    `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, window_start, window_end) VALUES ($1, $2, $3, $4, 'running', $5, $6) RETURNING id`,
    [run.source, run.resource, run.mode, run.purpose ?? null, run.windowStart, run.windowEnd],
  );
  return res.rows[0]!.id;
}

/** Adds one page's counts; called inside the page's transaction. */
export async function addPage(db: Queryable, runId: number, totals: PageTotals, requests: number): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET pages = pages + 1, requests = requests + $2, inserted = inserted + $3, updated = updated + $4,
       unchanged = unchanged + $5, rejected = rejected + $6 WHERE id = $1`,
    [runId, requests, totals.inserted, totals.updated, totals.unchanged, totals.rejected],
  );
}

/** Error messages may quote what a server sent; a NUL in one must not fail the run's last write. */
export async function finishRun(
  db: Queryable,
  runId: number,
  status: RunStatus,
  extra: { requests?: number; errorCode?: string; errorMessage?: string } = {},
): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET status = $2, ended_at = now(), requests = requests + $3, error_code = $4, error_message = $5 WHERE id = $1`,
    [
      runId,
      status,
      extra.requests ?? 0,
      extra.errorCode ?? null,
      extra.errorMessage === undefined ? null : storableText(extra.errorMessage),
    ],
  );
}

/** Runs left "running" by a process that died are closed as interrupted. */
export async function closeAbandonedRuns(db: Queryable, source: string, resource: string): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET status = 'interrupted', ended_at = now(), error_code = 'ABANDONED', error_message = 'the process ended before the run finished; resumed from its checkpoint'
     WHERE source = $1 AND resource = $2 AND status = 'running'`,
    [source, resource],
  );
}

/** When the last successful full pass of a stream started, if there was one. */
export async function lastFullPass(db: Queryable, source: string, resource: string): Promise<Date | null> {
  const res = await db.query<{ at: Date | null }>(
    `SELECT max(started_at) AS at FROM pmsync.runs WHERE source = $1 AND resource = $2 AND mode = 'full' AND status = 'succeeded'`,
    [source, resource],
  );
  return res.rows[0]?.at ?? null;
}

/** Rows each stream's checks found changed in windows that ended at or after `since` (pmsync's clock). */
export async function changesFoundSince(db: Queryable, source: string, since: Date): Promise<Map<string, number>> {
  const res = await db.query<{ resource: string; n: number }>(
    `SELECT resource, sum(inserted + updated)::int AS n FROM pmsync.runs
     WHERE source = $1 AND status = 'succeeded' AND window_end >= $2 AND purpose IN ('check', 'webhook', 'full')
     GROUP BY resource`,
    [source, since],
  );
  return new Map(res.rows.map((r) => [r.resource, r.n]));
}
