/**
 * Core and Subset lists (Page/Rows). An incremental stream reads one window
 * of ModifiedOn, from the stored cursor minus the overlap to the run start
 * minus the lag; a full-refresh stream reads everything and, once complete,
 * marks the rows it did not return. The window's filters never change while
 * it is paged. Pages are read in the order the pager chooses to survive rows
 * moving between pages while the window is read (src/api/pager.ts).
 */
import { initialPaging, pageByRows } from '../../api/pager.ts';
import { DEFAULT_CHECK_PAGES } from '../../config/schedules.ts';
import type { RestSourceConfig } from '../../config/schema.ts';
import { dbNow, markNotSeen } from '../../db/rows.ts';
import type { SyncContext } from '../context.ts';
import type { Reader } from '../driver.ts';
import { idReader, writePage } from '../page.ts';
import type { RunOptions } from '../run-scope.ts';
import type { RestStream } from '../streams/rest.ts';
import { nextWindow } from '../window.ts';
import { floorToSecond, formatInZone } from '../../time.ts';

export function restListReader(ctx: SyncContext, source: RestSourceConfig, stream: RestStream, options: RunOptions): Reader {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  const checkPages = options.checkPages ?? DEFAULT_CHECK_PAGES;
  return {
    resource: stream.resource,
    stream,
    skippedMode: 'incremental',
    learning: { from: 'modified-on', timeZone: source.timeZone },

    async open(state) {
      const runStart = floorToSecond(ctx.now());
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
        return null;
      }
      const filters: Record<string, string> = { ...stream.windowFilters?.(source, runStart) };
      if (!full) {
        if (bounds.start) filters.ModifiedOnStart = formatInZone(bounds.start, source.timeZone);
        filters.ModifiedOnEnd = formatInZone(bounds.end, source.timeZone);
      }
      return {
        window: {
          mode: full ? 'full' : 'incremental',
          start: bounds.start?.toISOString() ?? null,
          end: bounds.end.toISOString(),
          nextPage: 1,
          filters,
          startedAt: runStart.toISOString(),
          totalRows: null,
          paging: initialPaging(),
          ...(full ? { seenSince: (await dbNow(ctx.pool)).toISOString() } : {}),
        },
        purpose: full ? 'full' : undefined,
      };
    },

    async *units(window, { run, settings, observer, tally }) {
      const pages = pageByRows((page, rows) => client.get(stream.path, { ...window.filters, Page: page, Rows: rows }, run.get), {
        state: window.paging ?? initialPaging(window.nextPage),
      });
      for await (const page of pages) {
        // A check that turns out long (after downtime, or a bulk change at the source) is finished from the allowance.
        const purpose = run.get.purpose;
        if ((purpose === 'check' || purpose === 'webhook') && (page.totalPages ?? 0) > checkPages) {
          run.log.info(
            { totalPages: page.totalPages, checkPages },
            'this check needs more pages than a check may take; the rest of its window is read as a backfill',
          );
          run.get.purpose = 'backfill';
          window.purpose = 'backfill';
        }
        if (page.totalChange !== 0) {
          run.log.info(
            { page: page.page, totalRows: page.totalRows, change: page.totalChange, nextPage: page.last ? null : page.state.nextPage },
            'rows entered or left the window while it was paged',
          );
        }
        yield {
          write: (tx) =>
            writePage(tx, stream, page.records, {
              source: source.name,
              runId: run.runId,
              sentAt: page.sentAt,
              markSeen: window.mode === 'full',
              idOf,
              settings: settings!,
              observer,
              tally,
            }),
          last: page.last,
          advance(w) {
            w.nextPage = page.state.nextPage;
            w.paging = page.state;
            w.totalRows ??= page.totalRows;
          },
          progress: { page: page.state.pagesRead, rows: page.records.length, totalPages: page.state.totalPages },
        };
        if (page.last && page.state.unrepaired > 0) {
          run.log.warn(
            { unrepaired: page.state.unrepaired, repairs: page.state.repairs },
            'rows kept entering the window while it was paged; some may be read only by the next pass',
          );
        }
      }
    },

    async complete(tx, window, settings) {
      if (window.mode === 'full') await markNotSeen(tx, stream.table, source.name, window.seenSince ?? window.startedAt, settings!.history);
    },
  };
}
