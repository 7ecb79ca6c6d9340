/**
 * Refreshing one record: fetch it from its single-record endpoint and write it
 * like any page (validation, quarantine, an upsert that never overwrites a
 * newer copy). Used by webhook refreshes and `pmsync resync --id`.
 *
 * A 404 means the record is gone or no longer visible to the API user. The row
 * is kept and marked with not_seen_since: pmsync never deletes what it cannot
 * prove was deleted.
 */
import type { Purpose } from '../api/http.ts';
import type { RestSourceConfig } from '../config/schema.ts';
import { HttpError, PmsyncError } from '../errors.ts';
import { withTransaction } from '../db/pool.ts';
import type { SyncContext } from './context.ts';
import { idReader, writePage } from './page.ts';
import { markRowsNotSeen } from '../db/rows.ts';
import { applyPolicy } from './privacy-policies.ts';
import { settingsFor } from './table-settings.ts';
import type { RestStream } from './streams/rest.ts';
import type { PageTotals } from '../db/table.ts';

export type RefreshOutcome = { status: 'written'; totals: PageTotals } | { status: 'not_visible' };

export async function refreshRecord(
  ctx: SyncContext,
  source: RestSourceConfig,
  stream: RestStream,
  id: string,
  purpose: Purpose,
): Promise<RefreshOutcome> {
  if (!stream.recordPath) {
    throw new PmsyncError(
      'USAGE',
      `${stream.resource} has no single-record endpoint in the API; use "pmsync resync ${stream.resource} --since DATE" instead`,
    );
  }
  const client = ctx.clientFor(source);
  const settings = settingsFor(source, stream);
  await applyPolicy(ctx.pool, ctx.logger, source, stream, settings, 'run');
  let response;
  try {
    response = await client.get(stream.recordPath(id), {}, { purpose, signal: ctx.signal });
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) {
      await withTransaction(ctx.pool, (tx) => markRowsNotSeen(tx, stream.table, source.name, 'id = $2', [id], settings.history));
      return { status: 'not_visible' };
    }
    throw err;
  }
  const record = response.body;
  const totals = await withTransaction(ctx.pool, (tx) =>
    writePage(tx, stream, [record], {
      source: source.name,
      runId: null,
      sentAt: response.sentAt,
      markSeen: true,
      idOf: idReader(stream.idField),
      settings,
    }),
  );
  return { status: 'written', totals };
}
