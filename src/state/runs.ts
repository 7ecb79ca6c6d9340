/** Run history in pmsync.runs: one row per run of one stream for one source. */
import type { Queryable } from '../db/pool.ts';
import type { PageTotals } from '../sync/types.ts';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'quota_exhausted' | 'interrupted';

export async function startRun(
  db: Queryable,
  run: { source: string; resource: string; mode: string; windowStart: Date | null; windowEnd: Date | null },
): Promise<number> {
  const res = await db.query<{ id: number }>(
    `INSERT INTO pmsync.runs (source, resource, mode, status, window_start, window_end) VALUES ($1, $2, $3, 'running', $4, $5) RETURNING id`,
    [run.source, run.resource, run.mode, run.windowStart, run.windowEnd],
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

export async function finishRun(
  db: Queryable,
  runId: number,
  status: RunStatus,
  extra: { requests?: number; errorCode?: string; errorMessage?: string } = {},
): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET status = $2, ended_at = now(), requests = requests + $3, error_code = $4, error_message = $5 WHERE id = $1`,
    [runId, status, extra.requests ?? 0, extra.errorCode ?? null, extra.errorMessage ?? null],
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
