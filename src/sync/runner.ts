/**
 * The generic driver of Core and Subset streams.
 *
 * A run reads one window: incremental streams from the stored cursor minus the
 * overlap to the run start minus the lag; full-refresh streams everything. The
 * window's filters never change while it is paged. After each page, the page's
 * rows and the checkpoint (next page) commit in one transaction, so a run
 * killed at any moment resumes at the next page with nothing lost or doubled.
 * The cursor moves to the window's end only when the window completes.
 */
import { pageByRows } from '../api/pager.ts';
import type { Purpose } from '../api/http.ts';
import type { RestSourceConfig } from '../config.ts';
import { PmsyncError, QuotaExhaustedError, ShutdownError } from '../errors.ts';
import { withTransaction } from '../db/pool.ts';
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
      { startPage: current.nextPage },
    );
    for await (const page of pages) {
      const totals = await withTransaction(ctx.pool, async (tx) => {
        const t = await writePage(tx, stream, page.records, {
          source: source.name,
          runId,
          sentAt: page.sentAt,
          markSeen: current.mode === 'full',
          idOf,
        });
        if (page.last) {
          if (current.mode === 'full') await markNotSeen(tx, stream.table.name, source.name, new Date(current.startedAt));
          await completeWindow(tx, source.name, stream.resource, new Date(current.end));
        } else {
          current.nextPage = page.page + 1;
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
      ctx.onProgress?.({ source: source.name, resource: stream.resource, page: page.page, totalPages: page.totalPages, rows: page.records.length });
      if (!page.last && ctx.signal.aborted) throw new ShutdownError();
    }
    summary.status = 'succeeded';
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
async function markNotSeen(tx: { query: (text: string, values: unknown[]) => Promise<unknown> }, table: string, source: string, passStartedAt: Date): Promise<void> {
  await tx.query(`UPDATE "${table}" SET not_seen_since = now() WHERE source = $1 AND last_seen_at < $2 AND not_seen_since IS NULL`, [source, passStartedAt]);
}
