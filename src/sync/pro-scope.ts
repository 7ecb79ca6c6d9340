/**
 * What every Pro run shares: its row in pmsync.runs, the commit of one unit of
 * work (rows, checkpoint and run counters in one transaction), and the state a
 * source's runs share within one process.
 */
import type pg from 'pg';
import type { GetOptions, RequestStats } from '../api/http.ts';
import type { ProSourceConfig } from '../config.ts';
import { withTransaction, type Queryable } from '../db/pool.ts';
import { PmsyncError, QuotaExhaustedError, ShutdownError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { WindowCheckpoint } from '../state/checkpoints.ts';
import { addPage, finishRun, startRun } from '../state/runs.ts';
import type { SyncContext } from './context.ts';
import { PageSizes } from './pro-pager.ts';
import type { RunOptions, RunSummary } from './runner.ts';
import type { PageTotals } from './types.ts';

/** What the runs of one Pro source share within one process. */
export interface ProSession {
  pageSizes: PageSizes;
  /** Set once a request below /practices/{practiceId} succeeded: the token and practice are good. */
  practiceConfirmed: boolean;
}

export function newProSession(source: ProSourceConfig): ProSession {
  return { pageSizes: new PageSizes(source.pageLimit), practiceConfirmed: false };
}

export interface ProRunOptions extends RunOptions {
  /** Shared by the runs of one source in one sync; a fresh one is made when absent. */
  session?: ProSession;
}

/** Where an unfinished Pro window will resume, in words (for status). */
export function describePosition(window: WindowCheckpoint): string | null {
  const extra = window.extra ?? {};
  if (Array.isArray(extra.eventTypeIds)) return `at event type ${Number(extra.done ?? 0) + 1} of ${extra.eventTypeIds.length}`;
  if (typeof extra.after === 'number') return extra.after === 0 ? 'at the first key' : `after key ${extra.after}`;
  return null;
}

/** Every Pro path begins /practices/{practiceId}. */
export function practicePath(source: ProSourceConfig, path: string): string {
  return `/practices/${source.practiceId}${path}`;
}

/**
 * The database's clock, to millisecond precision. Pro bounds are compared with
 * synced_at and last_seen_at, which the database stamps, so they are taken
 * from the same clock.
 */
export async function dbNow(db: Queryable): Promise<Date> {
  const res = await db.query<{ now: Date }>("SELECT date_trunc('milliseconds', now()) AS now");
  return res.rows[0]!.now;
}

/**
 * Waits for every task, then throws the first failure: a failed request does
 * not leave its siblings running after the run has been recorded as ended.
 */
export async function allSettledOrThrow<T>(tasks: Array<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(tasks);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

export const NO_ROWS: PageTotals = { inserted: 0, updated: 0, unchanged: 0, rejected: 0 };

export interface RunScope {
  runId: number;
  log: Logger;
  stats: RequestStats;
  /** Options for every request of the run. */
  get: GetOptions;
  /** Commits one unit of work in one transaction with the run's counters, then reports progress. */
  commit(write: (tx: pg.PoolClient) => Promise<PageTotals>, progress: { page: number; rows: number }): Promise<void>;
  /** Stops at a unit boundary once a shutdown was requested. */
  checkAbort(): void;
}

export function skippedSummary(source: ProSourceConfig, resource: string, mode: string): RunSummary {
  return { source: source.name, resource, runId: null, status: 'skipped', mode, pages: 0, requests: 0, ...NO_ROWS };
}

/** Records one run of one stream around `body`, whatever way it ends. */
export async function withRun(
  ctx: SyncContext,
  source: ProSourceConfig,
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
  const summary: RunSummary = { source: source.name, resource, runId, status: 'running', mode: window.mode, pages: 0, requests: 0, ...NO_ROWS };
  const log = ctx.logger.child({ runId, source: source.name, resource });
  log.info({ mode: window.mode, window: { start: window.start, end: window.end } }, resumed ? 'resuming window' : 'run started');
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
      ctx.onProgress?.({ source: source.name, resource, page: progress.page, totalPages: null, rows: progress.rows });
    },
    checkAbort() {
      if (ctx.signal.aborted) throw new ShutdownError();
    },
  };
  try {
    await body(scope);
  } catch (err) {
    summary.status = err instanceof QuotaExhaustedError ? 'quota_exhausted' : err instanceof ShutdownError ? 'interrupted' : 'failed';
    summary.error = (err as Error).message;
    summary.requests = stats.requests;
    await finishRun(ctx.pool, runId, summary.status, {
      requests: stats.requests - counted,
      errorCode: err instanceof PmsyncError ? err.code : 'UNEXPECTED',
      errorMessage: (err as Error).message,
    });
    log.warn({ status: summary.status, err }, 'run stopped');
    throw err;
  }
  summary.status = 'succeeded';
  summary.requests = stats.requests;
  await finishRun(ctx.pool, runId, 'succeeded', { requests: stats.requests - counted });
  log.info({ pages: summary.pages, requests: summary.requests, inserted: summary.inserted, updated: summary.updated, unchanged: summary.unchanged, rejected: summary.rejected }, 'run finished');
  return summary;
}
