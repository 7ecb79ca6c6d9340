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
import type { Purpose } from '../api/http.ts';
import { initialPaging, pageByRows } from '../api/pager.ts';
import type { RestSourceConfig } from '../config.ts';
import { addObservation, ChangeTally, WARM_START_DAYS, windowObservation } from '../state/change-model.ts';
import { completeWindow, loadState, saveWindow, type WindowCheckpoint } from '../state/checkpoints.ts';
import { closeAbandonedRuns } from '../state/runs.ts';
import type { RestStream } from './streams/rest.ts';
import type { SyncContext } from './context.ts';
import { floorToSecond, formatInZone, nextWindow } from './window.ts';
import { idReader, prepareTable, writePage } from './page.ts';
import { dbNow, markNotSeen, skippedSummary, withRun, type RunOptions, type RunSummary } from './run-scope.ts';

/** A check longer than this many pages is finished as a backfill (schedules.checkPages). */
export const DEFAULT_CHECK_PAGES = 3;

export type { RunOptions, RunSummary } from './run-scope.ts';

export async function runRestStream(
  ctx: SyncContext,
  source: RestSourceConfig,
  stream: RestStream,
  options: RunOptions = {},
): Promise<RunSummary> {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  await closeAbandonedRuns(ctx.pool, source.name, stream.resource);
  const settings = await prepareTable(ctx.pool, ctx.logger, source, stream);
  const state = await loadState(ctx.pool, source.name, stream.resource);
  const runStart = floorToSecond(ctx.now());

  const resumed = !options.since && !options.full && state.window !== null;
  let window: WindowCheckpoint | null = resumed ? state.window : null;
  if (!window) {
    const full = options.full || stream.mode === 'full' || source.fullRefresh.includes(stream.resource);
    const lag = options.mustInclude
      ? Math.max(0, Math.min(source.lagSeconds, Math.floor((runStart.getTime() - options.mustInclude.getTime()) / 1000) - 1))
      : source.lagSeconds;
    const bounds = full
      ? { start: null, end: runStart }
      : nextWindow(options.since ?? state.cursor, runStart, options.since ? 0 : source.overlapSeconds, lag);
    if (!bounds) {
      ctx.logger.info(
        { source: source.name, resource: stream.resource, cursor: state.cursor },
        'cursor is past the window end; nothing to read',
      );
      return skippedSummary(source, stream.resource, 'incremental');
    }
    const filters: Record<string, string> = { ...stream.windowFilters?.(source, runStart) };
    if (!full) {
      if (bounds.start) filters.ModifiedOnStart = formatInZone(bounds.start, source.timeZone);
      filters.ModifiedOnEnd = formatInZone(bounds.end, source.timeZone);
    }
    const firstPass = state.cursor === null;
    window = {
      mode: full ? 'full' : 'incremental',
      start: bounds.start?.toISOString() ?? null,
      end: bounds.end.toISOString(),
      nextPage: 1,
      filters,
      startedAt: runStart.toISOString(),
      totalRows: null,
      paging: initialPaging(),
      // A resync window starts anywhere: it teaches the change model nothing.
      since: options.since || options.purpose === 'resync' ? undefined : (state.cursor?.toISOString() ?? null),
      purpose: options.purpose === 'resync' ? 'resync' : firstPass ? 'backfill' : full ? 'full' : (options.purpose ?? 'check'),
      ...(full ? { seenSince: (await dbNow(ctx.pool)).toISOString() } : {}),
    };
  } else if (options.purpose !== 'resync') {
    // An unfinished window is read as a backfill, whoever left it.
    window.purpose = 'backfill';
  }

  const current: WindowCheckpoint = window;
  const purpose: Purpose = options.purpose === 'resync' ? 'resync' : (current.purpose ?? 'check');
  // What this window reads teaches the change model when it completes (not resync windows).
  const learning = current.since !== undefined;
  const firstPass = current.since === null;
  const end = new Date(current.end);
  const from = firstPass ? new Date(end.getTime() - WARM_START_DAYS * 86_400_000) : new Date(current.since ?? current.end);
  const tally = learning ? ChangeTally.from(formatInZone(from, source.timeZone), current.tally) : null;
  const checkPages = options.checkPages ?? DEFAULT_CHECK_PAGES;
  return withRun(ctx, source, stream.resource, current, resumed, { ...options, purpose }, async (run) => {
    const observer = run.observe(stream, settings);
    const pages = pageByRows((page, rows) => client.get(stream.path, { ...current.filters, Page: page, Rows: rows }, run.get), {
      state: current.paging ?? initialPaging(current.nextPage),
    });
    for await (const page of pages) {
      // A check that turns out long (after downtime, or a bulk change at the source) is finished from the allowance.
      if ((purpose === 'check' || purpose === 'webhook') && run.get.purpose !== 'backfill' && (page.totalPages ?? 0) > checkPages) {
        run.log.info(
          { totalPages: page.totalPages, checkPages },
          'this check needs more pages than a check may take; the rest of its window is read as a backfill',
        );
        run.get.purpose = 'backfill';
        current.purpose = 'backfill';
      }
      if (page.totalChange !== 0) {
        run.log.info(
          { page: page.page, totalRows: page.totalRows, change: page.totalChange, nextPage: page.last ? null : page.state.nextPage },
          'rows entered or left the window while it was paged',
        );
      }
      await run.commit(
        async (tx) => {
          const totals = await writePage(tx, stream, page.records, {
            source: source.name,
            runId: run.runId,
            sentAt: page.sentAt,
            markSeen: current.mode === 'full',
            idOf,
            settings,
            observer,
            tally,
          });
          if (page.last) {
            if (current.mode === 'full')
              await markNotSeen(tx, stream.table, source.name, current.seenSince ?? current.startedAt, settings.history);
            await completeWindow(tx, source.name, stream.resource, end);
            if (tally) {
              const seen = windowObservation(tally, from, end, source.timeZone, firstPass);
              await addObservation(tx, source.name, stream.resource, end, seen.changes, seen.exposure);
            }
          } else {
            current.nextPage = page.state.nextPage;
            current.paging = page.state;
            if (current.totalRows === null) current.totalRows = page.totalRows;
            if (tally) current.tally = tally.toJSON();
            await saveWindow(tx, source.name, stream.resource, current);
          }
          return totals;
        },
        { page: page.state.pagesRead, rows: page.records.length, totalPages: page.state.totalPages },
      );
      if (page.last && page.state.unrepaired > 0) {
        run.log.warn(
          { unrepaired: page.state.unrepaired, repairs: page.state.repairs },
          'rows kept entering the window while it was paged; some may be read only by the next pass',
        );
      }
      if (!page.last) run.checkAbort();
    }
  });
}
