/**
 * One run of one stream, whatever the API kind: its row in pmsync.runs, the
 * commit of one unit of work (rows, checkpoint and the run's counters in one
 * transaction), and how it ends (succeeded, failed, quota exhausted,
 * interrupted). Both the Core/Subset runner and the Pro runner drive their
 * pages through this scope.
 */
import type pg from 'pg';
import type { GetOptions, Purpose, RequestStats } from '../api/http.ts';
import { withTransaction, type Queryable } from '../db/pool.ts';
import { PmsyncError, ShutdownError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { WindowCheckpoint } from '../state/checkpoints.ts';
import { addPage, finishRun, startRun, type RunStatus } from '../state/runs.ts';
import type { SyncContext } from './context.ts';
import type { PageTotals } from './types.ts';

export interface RunSummary extends PageTotals {
  source: string;
  resource: string;
  runId: number | null;
  status: RunStatus | 'skipped';
  mode: string;
  pages: number;
  requests: number;
  error?: string;
}

export interface RunOptions {
  purpose?: Purpose;
  /** Re-read from this instant instead of the stored cursor (resync --since). */
  since?: Date;
  /** Re-read the whole stream and mark rows it no longer returns (resync --full). */
  full?: boolean;
}

export const NO_ROWS: PageTotals = { inserted: 0, updated: 0, unchanged: 0, rejected: 0 };

export function skippedSummary(source: { name: string }, resource: string, mode: string): RunSummary {
  return { source: source.name, resource, runId: null, status: 'skipped', mode, pages: 0, requests: 0, ...NO_ROWS };
}

export interface RunScope {
  runId: number;
  log: Logger;
  stats: RequestStats;
  /** Options for every request of the run. */
  get: GetOptions;
  /** Commits one unit of work in one transaction with the run's counters, then reports progress. */
  commit(
    write: (tx: pg.PoolClient) => Promise<PageTotals>,
    progress: { page: number; rows: number; totalPages?: number | null },
  ): Promise<void>;
  /** Stops at a unit boundary once a shutdown was requested. */
  checkAbort(): void;
}

/** Records one run of one stream around `body`, whatever way it ends. */
export async function withRun(
  ctx: SyncContext,
  source: { name: string },
  resource: string,
  window: WindowCheckpoint,
  resumed: boolean,
  options: RunOptions,
  body: (run: RunScope) => Promise<void>,
): Promise<RunSummary> {
  const runId = await startRun(ctx.pool, {
    source: source.name,
    resource,
    mode: window.mode,
    windowStart: window.start ? new Date(window.start) : null,
    windowEnd: new Date(window.end),
  });
  const summary: RunSummary = {
    source: source.name,
    resource,
    runId,
    status: 'running',
    mode: window.mode,
    pages: 0,
    requests: 0,
    ...NO_ROWS,
  };
  const log = ctx.logger.child({ runId, source: source.name, resource });
  log.info(
    { mode: window.mode, window: { start: window.start, end: window.end }, fromPage: window.nextPage },
    resumed ? 'resuming window' : 'run started',
  );
  const stats: RequestStats = { requests: 0 };
  let counted = 0;
  const scope: RunScope = {
    runId,
    log,
    stats,
    get: { purpose: options.purpose, stats, signal: ctx.signal },
    async commit(write, progress) {
      const totals = await withTransaction(ctx.pool, async (tx) => {
        const t = await write(tx);
        await addPage(tx, runId, t, stats.requests - counted);
        return t;
      });
      counted = stats.requests;
      summary.pages += 1;
      summary.inserted += totals.inserted;
      summary.updated += totals.updated;
      summary.unchanged += totals.unchanged;
      summary.rejected += totals.rejected;
      ctx.onProgress?.({
        source: source.name,
        resource,
        page: progress.page,
        totalPages: progress.totalPages ?? null,
        rows: progress.rows,
      });
    },
    checkAbort() {
      if (ctx.signal.aborted) throw new ShutdownError();
    },
  };
  try {
    await body(scope);
  } catch (err) {
    const code = err instanceof PmsyncError ? err.code : undefined;
    summary.status = code === 'QUOTA_EXHAUSTED' ? 'quota_exhausted' : code === 'SHUTDOWN' ? 'interrupted' : 'failed';
    summary.error = (err as Error).message;
    summary.requests = stats.requests;
    await finishRun(ctx.pool, runId, summary.status, {
      requests: stats.requests - counted,
      errorCode: code ?? 'UNEXPECTED',
      errorMessage: (err as Error).message,
    });
    log.warn({ status: summary.status, err }, 'run stopped');
    throw err;
  }
  summary.status = 'succeeded';
  summary.requests = stats.requests;
  await finishRun(ctx.pool, runId, 'succeeded', { requests: stats.requests - counted });
  log.info(
    {
      pages: summary.pages,
      requests: summary.requests,
      inserted: summary.inserted,
      updated: summary.updated,
      unchanged: summary.unchanged,
      rejected: summary.rejected,
    },
    'run finished',
  );
  return summary;
}

/**
 * After a complete full pass: rows the API did not return in it are marked
 * with not_seen_since. They are never deleted; a later pass that sees them
 * again clears the mark.
 */
export async function markNotSeen(tx: Queryable, table: string, source: string, passStartedAt: Date | string): Promise<void> {
  await tx.query(`UPDATE "${table}" SET not_seen_since = now() WHERE source = $1 AND last_seen_at < $2 AND not_seen_since IS NULL`, [
    source,
    passStartedAt,
  ]);
}

/**
 * The database's clock, to millisecond precision. last_seen_at and synced_at
 * are stamped by the database, so bounds compared with them (the start of a
 * full pass) come from the same clock, not pmsync's (which may differ, or be
 * injected in tests).
 */
export async function dbNow(db: Queryable): Promise<Date> {
  const res = await db.query<{ now: Date }>("SELECT date_trunc('milliseconds', now()) AS now");
  return res.rows[0]!.now;
}
