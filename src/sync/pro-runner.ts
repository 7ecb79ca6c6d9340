/**
 * The driver of Pro streams. pmsync only reads the Pro API: every request it
 * sends there is a GET (no booking, no waitlist entries, no slot closing).
 *
 * - Lists (patients, event types, waitlist slots) are read whole on every run,
 *   page by page; each page's rows and the next page commit together, and the
 *   rows a completed pass did not return are marked not seen.
 * - Fan-outs (appointments per patient, waitlist entries by id) read their keys
 *   in ascending batches from rows already stored, with at most `concurrency`
 *   requests in flight. A batch's rows and the checkpoint "every key up to N is
 *   done" commit together, so a run killed at any moment resumes after the last
 *   committed batch, losing at most one batch of requests.
 * - Availability is captured as snapshots (pro-availability.ts).
 */
import pLimit from 'p-limit';
import type { HttpClient } from '../api/http.ts';
import type { ProSourceConfig } from '../config.ts';
import { HttpError } from '../errors.ts';
import { withTransaction, type Queryable } from '../db/pool.ts';
import { addObservation, ChangeTally, windowObservation } from '../state/change-model.ts';
import { completeWindow, loadState, saveWindow, type WindowCheckpoint } from '../state/checkpoints.ts';
import { closeAbandonedRuns } from '../state/runs.ts';
import type { SyncContext } from './context.ts';
import { idReader, prepareTable, writePage } from './page.ts';
import { runAvailability } from './pro-availability.ts';
import { listRecords, pageProList } from './pro-pager.ts';
import { allSettledOrThrow, newProSession, practicePath, type ProRunOptions, type ProSession } from './pro-scope.ts';
import { dbNow, markNotSeen, markRowsNotSeen, withRun, type RunScope, type RunSummary } from './run-scope.ts';
import type { ProFanOutStream, ProListStream, ProStream } from './streams/pro/stream.ts';

/** Keys read per committed batch: what a crash can cost in repeated requests. */
export const FAN_OUT_BATCH = 50;

export async function runProStream(
  ctx: SyncContext,
  source: ProSourceConfig,
  stream: ProStream,
  options: ProRunOptions = {},
): Promise<RunSummary> {
  const session = options.session ?? newProSession(source);
  switch (stream.kind) {
    case 'pro-list':
      return runList(ctx, source, stream, options, session);
    case 'pro-fan-out':
      return runFanOut(ctx, source, stream, options, session);
    case 'pro-snapshot':
      return runAvailability(ctx, source, stream, options, session);
  }
}

/** Whether a full sweep is due: never swept, sweeping every run, or the last sweep is old enough. */
export function sweepDue(lastSweep: Date | null, now: Date, everyHours: number): boolean {
  return lastSweep === null || everyHours === 0 || now.getTime() - lastSweep.getTime() >= everyHours * 3_600_000;
}

async function lastFullPass(db: Queryable, source: string, resource: string): Promise<Date | null> {
  const res = await db.query<{ at: Date | null }>(
    `SELECT max(started_at) AS at FROM pmsync.runs WHERE source = $1 AND resource = $2 AND mode = 'full' AND status = 'succeeded'`,
    [source, resource],
  );
  return res.rows[0]?.at ?? null;
}

function freshWindow(mode: 'full' | 'incremental', start: Date | null, now: Date, extra?: Record<string, unknown>): WindowCheckpoint {
  return {
    mode,
    start: start?.toISOString() ?? null,
    end: now.toISOString(),
    nextPage: 1,
    filters: {},
    startedAt: now.toISOString(),
    totalRows: null,
    extra,
  };
}

function pagerOptions(run: RunScope, source: ProSourceConfig, session: ProSession, idField: string, startPage = 1) {
  return {
    limit: source.pageLimit,
    startPage,
    sizes: session.pageSizes,
    idOf: idReader(idField),
    warn: (message: string, details: Record<string, unknown>) => run.log.warn(details, message),
  };
}

async function runList(
  ctx: SyncContext,
  source: ProSourceConfig,
  stream: ProListStream,
  options: ProRunOptions,
  session: ProSession,
): Promise<RunSummary> {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  await closeAbandonedRuns(ctx.pool, source.name, stream.resource);
  const settings = await prepareTable(ctx.pool, ctx.logger, source, stream);
  const state = await loadState(ctx.pool, source.name, stream.resource);
  const resumed = state.window !== null && !options.full;
  const window =
    resumed && state.window
      ? state.window
      : { ...freshWindow('full', null, await dbNow(ctx.pool)), since: state.cursor?.toISOString() ?? null };
  const learn = proLearning(source, stream.resource, window);

  return withRun(ctx, source, stream.resource, window, resumed, options, async (run) => {
    const observer = run.observe(stream, settings);
    const pages = pageProList(
      (page, limit) => client.get(practicePath(source, stream.path), { Page: page, Limit: limit }, run.get),
      pagerOptions(run, source, session, stream.idField, window.nextPage),
    );
    for await (const page of pages) {
      session.practiceConfirmed = true;
      await run.commit(
        async (tx) => {
          const totals = await writePage(tx, stream, page.records, {
            source: source.name,
            runId: run.runId,
            sentAt: page.sentAt,
            markSeen: true,
            idOf,
            settings,
            observer,
            tally: learn?.tally,
          });
          if (page.last) {
            await markNotSeen(tx, stream.table, source.name, new Date(window.startedAt), settings.history);
            await completeWindow(tx, source.name, stream.resource, new Date(window.end));
            await learn?.complete(tx);
          } else {
            window.nextPage = page.page + 1;
            if (learn) window.tally = learn.tally.toJSON();
            await saveWindow(tx, source.name, stream.resource, window);
          }
          return totals;
        },
        { page: page.page, rows: page.records.length },
      );
      if (!page.last) run.checkAbort();
    }
  });
}

interface KeyRead {
  key: number;
  records: unknown[];
  /** When the first request for the key was sent; null when it answered 404. */
  sentAt: Date | null;
}

async function runFanOut(
  ctx: SyncContext,
  source: ProSourceConfig,
  stream: ProFanOutStream,
  options: ProRunOptions,
  session: ProSession,
): Promise<RunSummary> {
  const client = ctx.clientFor(source);
  const idOf = idReader(stream.idField);
  await closeAbandonedRuns(ctx.pool, source.name, stream.resource);
  const settings = await prepareTable(ctx.pool, ctx.logger, source, stream);
  const state = await loadState(ctx.pool, source.name, stream.resource);
  const resumed = state.window !== null && !options.full && !options.since;
  let window: WindowCheckpoint;
  if (resumed && state.window) {
    window = state.window;
  } else {
    const now = await dbNow(ctx.pool);
    const since = stream.incremental && !options.full ? (options.since ?? null) : null;
    const changedOnly =
      stream.incremental &&
      !options.full &&
      !options.since &&
      state.cursor !== null &&
      !sweepDue(await lastFullPass(ctx.pool, source.name, stream.resource), now, source.appointments.fullSweepHours) &&
      !(await rowsLackTheirKey(ctx.pool, stream, source.name));
    window = {
      ...freshWindow(changedOnly || since ? 'incremental' : 'full', since, now, { after: 0, changedOnly }),
      since: since ? undefined : (state.cursor?.toISOString() ?? null),
    };
  }
  const learn = proLearning(source, stream.resource, window);
  const position = { after: Number(window.extra?.after ?? 0) };
  const query = { source, changedOnly: window.extra?.changedOnly === true, changedSince: window.start ? new Date(window.start) : null };

  return withRun(ctx, source, stream.resource, window, resumed, options, async (run) => {
    const observer = run.observe(stream, settings);
    const limit = pLimit(source.concurrency);
    for (let batch = 1; ; batch++) {
      const keys = await stream.keys(ctx.pool, { ...query, after: position.after, limit: FAN_OUT_BATCH });
      if (keys.length === 0) {
        await withTransaction(ctx.pool, async (tx) => {
          await completeWindow(tx, source.name, stream.resource, new Date(window.end));
          await learn?.complete(tx);
        });
        return;
      }
      await confirmPractice(client, source, session, run);
      const reads = await allSettledOrThrow(keys.map((key) => limit(() => readKey(client, source, stream, session, run, key))));
      const last = keys.length < FAN_OUT_BATCH;
      const records = reads.flatMap((r) => r.records);
      const keyOf = reads.flatMap((r) => r.records.map(() => r.key));
      const sentAts = reads.flatMap((r) => (r.sentAt ? [r.sentAt.getTime()] : []));
      await run.commit(
        async (tx) => {
          const totals = await writePage(tx, stream, records, {
            source: source.name,
            runId: run.runId,
            sentAt: new Date(sentAts.length > 0 ? Math.min(...sentAts) : Date.now()),
            markSeen: true,
            idOf,
            settings,
            observer,
            tally: learn?.tally,
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
            settings.history,
          );
          await stream.markRead?.(tx, source, keys);
          position.after = keys[keys.length - 1]!;
          if (last) {
            if (stream.coversTable && window.mode === 'full')
              await markNotSeen(tx, stream.table, source.name, new Date(window.startedAt), settings.history);
            await completeWindow(tx, source.name, stream.resource, new Date(window.end));
            await learn?.complete(tx);
          } else
            await saveWindow(tx, source.name, stream.resource, {
              ...window,
              extra: { ...window.extra, after: position.after },
              ...(learn ? { tally: learn.tally.toJSON() } : {}),
            });
          return totals;
        },
        { page: batch, rows: records.length },
      );
      run.log.debug({ batch, keys: keys.length, through: position.after, rows: records.length }, 'batch committed');
      if (last) return;
      run.checkAbort();
    }
  });
}

/**
 * The change model learns from Pro passes too. Pro records carry no
 * modification time, so a pass counts the rows it inserted or changed and
 * spreads them over the hours since the previous pass; a first pass teaches
 * nothing (everything is new to it).
 */
function proLearning(
  source: ProSourceConfig,
  resource: string,
  window: WindowCheckpoint,
): { tally: ChangeTally; complete(tx: Queryable): Promise<void> } | null {
  if (!window.since) return null;
  const since = new Date(window.since);
  const tally = ChangeTally.from(null, window.tally);
  return {
    tally,
    async complete(tx) {
      const end = new Date(window.end);
      const seen = windowObservation(tally, since, end, 'UTC', false);
      await addObservation(tx, source.name, resource, end, seen.changes, seen.exposure);
    },
  };
}

/**
 * Whether current rows lack the key they were read under (rows stored before
 * the key was taken from the request): only a full pass can give them their
 * key or, when no key returns them any more, mark them not seen.
 */
async function rowsLackTheirKey(db: Queryable, stream: ProFanOutStream, source: string): Promise<boolean> {
  if (!('list' in stream.read)) return false;
  const res = await db.query(
    `SELECT 1 FROM "${stream.table.name}" WHERE source = $1 AND "${stream.keyColumn}" IS NULL AND not_seen_since IS NULL LIMIT 1`,
    [source],
  );
  return res.rows.length > 0;
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
