/**
 * Pro fan-outs (appointments per patient, waitlist entries by id): keys are
 * read in ascending batches from rows already stored, with at most
 * `concurrency` requests in flight. A batch's rows and the checkpoint "every
 * key up to N is done" commit together, so a run killed at any moment resumes
 * after the last committed batch, losing at most one batch of requests.
 *
 * An incremental fan-out reads only the keys whose parent row changed since
 * they were last read, with a full sweep every `fullSweepHours`.
 */
import pLimit from 'p-limit';
import type { HttpClient } from '../../api/http.ts';
import { listRecords, pageProList } from '../../api/pro-pager.ts';
import type { ProSourceConfig } from '../../config/schema.ts';
import { currentRowsLack, dbNow, markNotSeen, markRowsNotSeen } from '../../db/rows.ts';
import { HttpError } from '../../errors.ts';
import { lastFullPass } from '../../state/runs.ts';
import type { SyncContext } from '../context.ts';
import type { Reader } from '../driver.ts';
import { idReader, writePage } from '../page.ts';
import type { RunOptions, RunScope } from '../run-scope.ts';
import type { ProFanOutStream } from '../streams/pro/stream.ts';
import { allSettledOrThrow, freshProWindow, pagerOptions, practicePath, type ProSession } from './pro-session.ts';

/** Keys read per committed batch: what a crash can cost in repeated requests. */
export const FAN_OUT_BATCH = 50;

/** Whether a full sweep is due: never swept, sweeping every run, or the last sweep is old enough. */
export function sweepDue(lastSweep: Date | null, now: Date, everyHours: number): boolean {
  return lastSweep === null || everyHours === 0 || now.getTime() - lastSweep.getTime() >= everyHours * 3_600_000;
}

interface KeyRead {
  key: number;
  records: unknown[];
  /** When the first request for the key was sent; null when it answered 404. */
  sentAt: Date | null;
}

export function fanOutReader(
  ctx: SyncContext,
  source: ProSourceConfig,
  stream: ProFanOutStream,
  options: RunOptions,
  session: ProSession,
): Reader {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  return {
    resource: stream.resource,
    stream,
    skippedMode: 'full',
    learning: { from: 'changes' },

    async open(state) {
      const now = await dbNow(ctx.pool);
      const since = stream.incremental && !options.full ? (options.since ?? null) : null;
      const changedOnly =
        stream.incremental &&
        !options.full &&
        !options.since &&
        state.cursor !== null &&
        !sweepDue(await lastFullPass(ctx.pool, source.name, stream.resource), now, source.appointments.fullSweepHours) &&
        // Rows stored without the key they were read under: only a full pass can give them their key or mark them gone.
        !('list' in stream.read && (await currentRowsLack(ctx.pool, stream.table, source.name, stream.keyColumn)));
      return { window: freshProWindow(changedOnly || since ? 'incremental' : 'full', since, now, { after: 0, changedOnly }) };
    },

    async *units(window, { run, settings, observer, tally }) {
      const limit = pLimit(source.concurrency);
      const query = { source, changedOnly: window.extra?.changedOnly === true, changedSince: window.start ? new Date(window.start) : null };
      let after = Number(window.extra?.after ?? 0);
      for (let batch = 1; ; batch++) {
        const keys = await stream.keys(ctx.pool, { ...query, after, limit: FAN_OUT_BATCH });
        if (keys.length === 0) return;
        await confirmPractice(client, source, session, run);
        const reads = await allSettledOrThrow(keys.map((key) => limit(() => readKey(client, source, stream, session, run, key))));
        const records = reads.flatMap((r) => r.records);
        const keyOf = reads.flatMap((r) => r.records.map(() => r.key));
        const sentAts = reads.flatMap((r) => (r.sentAt ? [r.sentAt.getTime()] : []));
        const through = keys[keys.length - 1]!;
        yield {
          async write(tx) {
            const totals = await writePage(tx, stream, records, {
              source: source.name,
              runId: run.runId,
              sentAt: new Date(sentAts.length > 0 ? Math.min(...sentAts) : Date.now()),
              markSeen: true,
              idOf,
              settings: settings!,
              observer,
              tally,
              // A listed record belongs to the key it was listed under, whether or not it says so.
              fromRequest:
                'list' in stream.read ? { columns: [stream.keyColumn], values: (i) => ({ [stream.keyColumn]: keyOf[i] }) } : undefined,
            });
            // Each key's read was complete: its stored rows the API no longer returned are gone (or moved).
            await markRowsNotSeen(
              tx,
              stream.table,
              source.name,
              `"${stream.keyColumn}" = ANY($2::bigint[]) AND NOT (id = ANY($3::bigint[]))`,
              [keys, records.map(idOf).filter((id): id is string => id !== null && /^\d+$/.test(id))],
              settings!.history,
            );
            await stream.markRead?.(tx, source, keys);
            return totals;
          },
          last: keys.length < FAN_OUT_BATCH,
          advance(w) {
            w.extra = { ...w.extra, after: through };
          },
          progress: { page: batch, rows: records.length },
        };
        run.log.debug({ batch, keys: keys.length, through, rows: records.length }, 'batch committed');
        after = through;
        if (keys.length < FAN_OUT_BATCH) return;
      }
    },

    async complete(tx, window, settings) {
      // A full pass read every key the table's rows can belong to: the rows it did not return are gone.
      if (stream.coversTable && window.mode === 'full')
        await markNotSeen(tx, stream.table, source.name, new Date(window.startedAt), settings!.history);
    },
  };
}

/**
 * Before fanning out, unless a list of this session already did it: one
 * patients page proves the token and practice id, so a wrong practice fails
 * the run instead of reading as "every key is gone", and its size tells the
 * pager what a full page looks like.
 */
async function confirmPractice(client: HttpClient, source: ProSourceConfig, session: ProSession, run: RunScope): Promise<void> {
  if (session.practiceConfirmed) return;
  const res = await client.get(practicePath(source, '/patients'), { Page: 1, Limit: source.pageLimit }, run.get);
  session.pageSizes.observe(listRecords(res.body, 1).length);
  session.practiceConfirmed = true;
}

async function readKey(
  client: HttpClient,
  source: ProSourceConfig,
  stream: ProFanOutStream,
  session: ProSession,
  run: RunScope,
  key: number,
): Promise<KeyRead> {
  try {
    if ('record' in stream.read) {
      const res = await client.get(practicePath(source, stream.read.record(key)), {}, run.get);
      return { key, records: [unwrapRecord(res.body, stream.idField)], sentAt: res.sentAt };
    }
    const records: unknown[] = [];
    let sentAt: Date | null = null;
    const path = practicePath(source, stream.read.list(key));
    for await (const page of pageProList(
      (p, limit) => client.get(path, { Page: p, Limit: limit }, run.get),
      pagerOptions(run, source, session, stream.idField),
    )) {
      sentAt ??= page.sentAt;
      records.push(...page.records);
    }
    return { key, records, sentAt };
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return { key, records: [], sentAt: null };
    throw err;
  }
}

/** A single record, or the spec's list envelope around one: `{ data: {...} }`. */
function unwrapRecord(body: unknown, idField: string): unknown {
  if (body !== null && typeof body === 'object' && !(idField in body) && 'data' in body) {
    const data = (body as { data: unknown }).data;
    if (data !== null && typeof data === 'object' && !Array.isArray(data)) return data;
  }
  return body;
}
