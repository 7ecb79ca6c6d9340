/**
 * One run of one stream, whatever the API kind: its row in pmsync.runs, the
 * commit of one unit of work (rows, checkpoint and the run's counters in one
 * transaction), and how it ends (succeeded, failed, quota exhausted,
 * interrupted). The driver (driver.ts) runs every stream's units through
 * this scope.
 */
import type pg from 'pg';
import type { GetOptions, Purpose, RequestStats } from '../api/http.ts';
import { withTransaction } from '../db/pool.ts';
import { PmsyncError, ShutdownError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { WindowCheckpoint } from '../state/checkpoints.ts';
import { addPage, finishRun, startRun, type RunStatus } from '../state/runs.ts';
import { recordDrift } from './drift-record.ts';
import type { SyncContext } from './context.ts';
import { DriftObserver } from './drift.ts';
import type { TableSettings } from './table-settings.ts';
import type { PageTotals } from '../db/table.ts';
import type { StreamBase } from './types.ts';

export interface RunSummary extends PageTotals {
  source: string;
  resource: string;
  runId: number | null;
  status: RunStatus | 'skipped';
  mode: string;
  /** Why the run was made (the purpose its first request was counted under). */
  purpose?: Purpose;
  pages: number;
  requests: number;
  /** End of the window the run completed, when it completed one. */
  windowEnd?: Date;
  error?: string;
}

export interface RunOptions {
  /**
   * Why the run is made. Left out, the driver decides: a first pass or an
   * unfinished window is a backfill, a full-refresh pass is full, anything
   * else a check. An unfinished window is always read as a backfill, and so
   * is the rest of a check that turns out longer than `checkPages` pages.
   */
  purpose?: Purpose;
  /** Re-read from this instant instead of the stored cursor (resync --since). */
  since?: Date;
  /** Re-read the whole stream and mark rows it no longer returns (resync --full). */
  full?: boolean;
  /** The window must reach this instant, whatever lagSeconds says (a notified change). */
  mustInclude?: Date;
  /** Pages a check may take before the rest of its window is read as a backfill. */
  checkPages?: number;
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
  /** An observer of the run's records for a table's schema-drift report, recorded when the run ends. */
  observe(stream: StreamBase, settings: TableSettings): DriftObserver;
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
    purpose: options.purpose ?? null,
    windowStart: window.start ? new Date(window.start) : null,
    windowEnd: new Date(window.end),
  });
  const summary: RunSummary = {
    source: source.name,
    resource,
    runId,
    status: 'running',
    mode: window.mode,
    purpose: options.purpose,
    pages: 0,
    requests: 0,
    ...NO_ROWS,
  };
  const log = ctx.logger.child({ runId, source: source.name, resource });
  log.info(
    { mode: window.mode, purpose: options.purpose, window: { start: window.start, end: window.end }, fromPage: window.nextPage },
    resumed ? 'resuming window' : 'run started',
  );
  const stats: RequestStats = { requests: 0 };
  let counted = 0;
  const observed: Array<{ stream: StreamBase; settings: TableSettings; observer: DriftObserver }> = [];
  // Once per run, whatever way it ends; a drift report is never worth failing a run over.
  const recordObserved = async (completed: boolean) => {
    for (const o of observed) {
      if (o.observer.records === 0) continue;
      try {
        await recordDrift(
          ctx.pool,
          log,
          { source: source.name, stream: o.stream, settings: o.settings },
          o.observer,
          completed && window.mode === 'full' && !resumed,
        );
      } catch (err) {
        log.warn({ err, table: o.stream.table.name }, 'the schema-drift report could not be updated');
      }
    }
  };
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
        requests: stats.requests,
      });
    },
    checkAbort() {
      if (ctx.signal.aborted) throw new ShutdownError();
    },
    observe(stream, settings) {
      const observer = new DriftObserver();
      observed.push({ stream, settings, observer });
      return observer;
    },
  };
  try {
    await body(scope);
  } catch (err) {
    ctx.onRunEnd?.({ source: source.name, resource });
    const code = err instanceof PmsyncError ? err.code : undefined;
    summary.status = code === 'QUOTA_EXHAUSTED' ? 'quota_exhausted' : code === 'SHUTDOWN' ? 'interrupted' : 'failed';
    summary.error = (err as Error).message;
    summary.requests = stats.requests;
    await recordObserved(false);
    await finishRun(ctx.pool, runId, summary.status, {
      requests: stats.requests - counted,
      errorCode: code ?? 'UNEXPECTED',
      errorMessage: (err as Error).message,
    });
    // Whoever called the run reports its error (the CLI's summary, serve's run log): this line names only the outcome.
    log.warn({ status: summary.status, code: code ?? 'UNEXPECTED', ...(code ? {} : { err }) }, 'run stopped');
    throw err;
  }
  ctx.onRunEnd?.({ source: source.name, resource });
  summary.status = 'succeeded';
  summary.requests = stats.requests;
  summary.windowEnd = new Date(window.end);
  await recordObserved(true);
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
