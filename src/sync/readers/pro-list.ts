/**
 * Pro lists (patients, event types, waitlist slots): read whole on every run,
 * page by page; a completed pass marks the rows it did not return. pmsync only
 * reads the Pro API: every request it sends there is a GET.
 */
import { pageProList } from '../../api/pro-pager.ts';
import type { ProSourceConfig } from '../../config/schema.ts';
import { dbNow, markNotSeen } from '../../db/rows.ts';
import type { SyncContext } from '../context.ts';
import type { Reader } from '../driver.ts';
import { idReader, writePage } from '../page.ts';
import type { ProListStream } from '../streams/pro/stream.ts';
import { freshProWindow, pagerOptions, practicePath, type ProSession } from './pro-session.ts';

export function proListReader(ctx: SyncContext, source: ProSourceConfig, stream: ProListStream, session: ProSession): Reader {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  return {
    resource: stream.resource,
    stream,
    skippedMode: 'full',
    learning: { from: 'changes' },

    async open() {
      return { window: freshProWindow('full', null, await dbNow(ctx.pool)) };
    },

    async *units(window, { run, settings, observer, tally }) {
      const pages = pageProList(
        (page, limit) => client.get(practicePath(source, stream.path), { Page: page, Limit: limit }, run.get),
        pagerOptions(run, source, session, stream.idField, window.nextPage),
      );
      for await (const page of pages) {
        session.practiceConfirmed = true;
        yield {
          write: (tx) =>
            writePage(tx, stream, page.records, {
              source: source.name,
              runId: run.runId,
              sentAt: page.sentAt,
              markSeen: true,
              idOf,
              settings: settings!,
              observer,
              tally,
            }),
          last: page.last,
          advance(w) {
            w.nextPage = page.page + 1;
          },
          progress: { page: page.page, rows: page.records.length },
        };
      }
    },

    async complete(tx, window, settings) {
      await markNotSeen(tx, stream.table, source.name, new Date(window.startedAt), settings!.history);
    },
  };
}
