/**
 * The generic driver of Core and Subset streams.
 *
 * A run reads one window: incremental streams from the stored cursor minus the
 * overlap to the run start minus the lag; full-refresh streams everything. The
 * window's filters never change while it is paged. After each page, the page's
 * rows and the checkpoint (the pager's position) commit in one transaction, so
 * a run killed at any moment resumes at the next page with nothing lost or
 * doubled. The cursor moves to the window's end only when the window completes.
 * Pages are read in the order the pager chooses to survive rows moving between
 * pages while the window is read (src/api/pager.ts).
 */
import { initialPaging, pageByRows } from '../api/pager.ts';
import type { Purpose } from '../api/http.ts';
import type { RestSourceConfig } from '../config.ts';
import { PmsyncError, ShutdownError } from '../errors.ts';
import { withTransaction, type Queryable } from '../db/pool.ts';
import { completeWindow, loadState, saveWindow, type WindowCheckpoint } from '../state/checkpoints.ts';
import { addPage, closeAbandonedRuns, finishRun, startRun, type RunStatus } from '../state/runs.ts';
import type { RestStream } from './streams/rest.ts';
import type { SyncContext } from './context.ts';
import type { PageTotals } from './types.ts';
import { floorToSecond, formatInZone, nextWindow } from './window.ts';
import { idReader, writePage } from './page.ts';

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

export async function runRestStream(ctx: SyncContext, source: RestSourceConfig, stream: RestStream, options: RunOptions = {}): Promise<RunSummary> {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  await closeAbandonedRuns(ctx.pool, source.name, stream.resource);
  const state = await loadState(ctx.pool, source.name, stream.resource);
  const runStart = floorToSecond(ctx.now());

  let window: WindowCheckpoint | null = options.since || options.full ? null : state.window;
  if (!window) {
    const full = options.full || stream.mode === 'full' || source.fullRefresh.includes(stream.resource);
    const bounds = full ? { start: null, end: runStart } : nextWindow(options.since ?? state.cursor, runStart, options.since ? 0 : source.overlapSeconds, source.lagSeconds);
    const summaryBase = { source: source.name, resource: stream.resource, mode: full ? 'full' : 'incremental' };
    if (!bounds) {
      ctx.logger.info({ ...summaryBase, cursor: state.cursor }, 'cursor is at or past the window end; nothing to read');
      return { ...summaryBase, runId: null, status: 'skipped', pages: 0, requests: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0 };
    }
    const filters: Record<string, string> = { ...stream.windowFilters?.(source, runStart) };
    if (!full) {
      if (bounds.start) filters.ModifiedOnStart = formatInZone(bounds.start, source.timeZone);
      filters.ModifiedOnEnd = formatInZone(bounds.end, source.timeZone);
    }
    window = {
      mode: full ? 'full' : 'incremental',
      start: bounds.start?.toISOString() ?? null,
      end: bounds.end.toISOString(),
      nextPage: 1,
      filters,
      startedAt: runStart.toISOString(),
      totalRows: null,
      paging: initialPaging(),
      ...(full ? { seenSince: await databaseNow(ctx.pool) } : {}),
    };
  }

  const runId = await startRun(ctx.pool, {
    source: source.name,
    resource: stream.resource,
    mode: window.mode,
    windowStart: window.start ? new Date(window.start) : null,
    windowEnd: new Date(window.end),
  });
  const summary: RunSummary = {
    source: source.name,
    resource: stream.resource,
    runId,
    status: 'running',
    mode: window.mode,
    pages: 0,
    requests: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
  };
  const log = ctx.logger.child({ runId, source: source.name, resource: stream.resource });
  log.info({ mode: window.mode, window: { start: window.start, end: window.end }, fromPage: window.nextPage }, state.window && window === state.window ? 'resuming window' : 'run started');

  const stats = { requests: 0 };
  let counted = 0;
  const current: WindowCheckpoint = window;
  try {
    const pages = pageByRows(
      (page, rows) => client.get(stream.path, { ...current.filters, Page: page, Rows: rows }, { purpose: options.purpose, stats, signal: ctx.signal }),
      { state: current.paging ?? initialPaging(current.nextPage) },
    );
    for await (const page of pages) {
      if (page.totalChange !== 0) {
        log.info({ page: page.page, totalRows: page.totalRows, change: page.totalChange, nextPage: page.last ? null : page.state.nextPage }, 'rows entered or left the window while it was paged');
      }
      const totals = await withTransaction(ctx.pool, async (tx) => {
        const t = await writePage(tx, stream, page.records, {
          source: source.name,
          runId,
          sentAt: page.sentAt,
          markSeen: current.mode === 'full',
          idOf,
        });
        if (page.last) {
          if (current.mode === 'full') await markNotSeen(tx, stream.table.name, source.name, current.seenSince ?? current.startedAt);
          await completeWindow(tx, source.name, stream.resource, new Date(current.end));
        } else {
          current.nextPage = page.state.nextPage;
          current.paging = page.state;
          if (current.totalRows === null) current.totalRows = page.totalRows;
          await saveWindow(tx, source.name, stream.resource, current);
        }
        await addPage(tx, runId, t, stats.requests - counted);
        return t;
      });
      counted = stats.requests;
      summary.pages += 1;
      summary.inserted += totals.inserted;
      summary.updated += totals.updated;
      summary.unchanged += totals.unchanged;
      summary.rejected += totals.rejected;
      if (page.last && page.state.unrepaired > 0) {
        log.warn({ unrepaired: page.state.unrepaired, repairs: page.state.repairs }, 'rows kept entering the window while it was paged; some may be read only by the next pass');
      }
      ctx.onProgress?.({ source: source.name, resource: stream.resource, page: page.state.pagesRead, totalPages: page.state.totalPages, rows: page.records.length });
      if (!page.last && ctx.signal.aborted) throw new ShutdownError();
    }
    summary.status = 'succeeded';
  } catch (err) {
    const code = err instanceof PmsyncError ? err.code : undefined;
    summary.status = code === 'QUOTA_EXHAUSTED' ? 'quota_exhausted' : code === 'SHUTDOWN' ? 'interrupted' : 'failed';
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
  summary.requests = stats.requests;
  await finishRun(ctx.pool, runId, 'succeeded', { requests: stats.requests - counted });
  log.info({ pages: summary.pages, requests: summary.requests, inserted: summary.inserted, updated: summary.updated, unchanged: summary.unchanged, rejected: summary.rejected }, 'run finished');
  return summary;
}

/**
 * After a complete full pass: rows the API did not return in it are marked
 * with not_seen_since. They are never deleted; a later pass that sees them
 * again clears the mark.
 */
async function markNotSeen(tx: Queryable, table: string, source: string, passStartedAt: string): Promise<void> {
  await tx.query(`UPDATE "${table}" SET not_seen_since = now() WHERE source = $1 AND last_seen_at < $2 AND not_seen_since IS NULL`, [source, passStartedAt]);
}

/**
 * last_seen_at is written with the database's clock, so the start of a full
 * pass is taken from the same clock (pmsync's own may differ, or be injected).
 */
async function databaseNow(db: Queryable): Promise<string> {
  const res = await db.query<{ now: Date }>('SELECT now() AS now');
  return res.rows[0]!.now.toISOString();
}
