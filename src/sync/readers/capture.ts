/**
 * Availability captures: open capacity as the Pro API shows it at one instant.
 *
 * A capture reads the event types, then per event type the providers offering
 * it and, per provider, the open slots from today to today + horizonDays. Rows
 * are appended, never updated: analysts compare captures to see capacity over
 * time. pro_availability_captures has one row per capture; its completed_at is
 * set once every event type is in, so partial captures are easy to leave out.
 *
 * Units: the event type list (frozen when the capture opens), then one event
 * type each. A capture interrupted by a crash is finished by the next run
 * under the same captured_at. A run takes a new capture only when the last one
 * is at least `availability.minIntervalMinutes` old, unless forced.
 *
 * Request cost of one capture: the event type list (1 request per page), one
 * providers request per event type, one slots request per (event type,
 * provider) pair.
 */
import pLimit from 'p-limit';
import type { HttpClient } from '../../api/http.ts';
import { pageProList } from '../../api/pro-pager.ts';
import type { ProSourceConfig } from '../../config/schema.ts';
import type { Queryable } from '../../db/pool.ts';
import { dbNow } from '../../db/rows.ts';
import { describeIssues } from '../../mappers/common.ts';
import { mapProviderEntry, mapSlotGroup, providerEntryRaw, slotGroupRaw, type ProviderEntryRow } from '../../mappers/pro/availability.ts';
import type { WindowCheckpoint } from '../../state/checkpoints.ts';
import { quarantine, type Rejected } from '../../state/quarantine.ts';
import type { SyncContext } from '../context.ts';
import type { Reader } from '../driver.ts';
import { idReader, unstorableReason } from '../page.ts';
import { NO_ROWS, type RunOptions, type RunScope } from '../run-scope.ts';
import type { ProSnapshotStream } from '../streams/pro/stream.ts';
import eventTypes from '../streams/pro/event-types.ts';
import { dateInZone } from '../../time.ts';
import { allSettledOrThrow, pagerOptions, practicePath, type ProSession } from './pro-session.ts';

const DAY_MS = 86_400_000;

interface CapturePosition {
  /** Event types of this capture, frozen when it opened; null until read. */
  eventTypeIds: number[] | null;
  /** How many of them are committed. */
  done: number;
}

/**
 * The slots query's Start and End dates. The practice's time zone is not
 * shown anywhere in the API, so "today" is the UTC date of the capture.
 */
export function horizon(capturedAt: Date, horizonDays: number): { start: string; end: string } {
  return { start: dateInZone(capturedAt, 'UTC'), end: dateInZone(new Date(capturedAt.getTime() + horizonDays * DAY_MS), 'UTC') };
}

export function captureReader(
  ctx: SyncContext,
  source: ProSourceConfig,
  stream: ProSnapshotStream,
  options: RunOptions,
  session: ProSession,
): Reader {
  const client = ctx.clientFor(source);
  return {
    resource: stream.resource,
    skippedMode: 'snapshot',
    learning: null,

    async open(state) {
      const now = await dbNow(ctx.pool);
      const forced = options.full || options.since;
      if (!forced && state.cursor && now.getTime() - state.cursor.getTime() < source.availability.minIntervalMinutes * 60_000) {
        ctx.logger.info(
          { source: source.name, resource: stream.resource, lastCapture: state.cursor },
          'the last availability capture is recent enough; none taken',
        );
        return null;
      }
      const { start, end } = horizon(now, source.availability.horizonDays);
      const position: CapturePosition = { eventTypeIds: null, done: 0 };
      return {
        window: {
          mode: 'full',
          start: null,
          end: now.toISOString(),
          nextPage: 1,
          filters: { Start: start, End: end },
          startedAt: now.toISOString(),
          totalRows: null,
          extra: { ...position },
        },
      };
    },

    async *units(window, { run }) {
      const capturedAt = new Date(window.end);
      const position = { ...((window.extra ?? { eventTypeIds: null, done: 0 }) as unknown as CapturePosition) };
      if (position.eventTypeIds === null) {
        const ids = await readEventTypeIds(client, source, session, run);
        yield {
          async write(tx) {
            await tx.query(
              `INSERT INTO pro_availability_captures (source, captured_at, horizon_start, horizon_end, run_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
              [source.name, capturedAt, window.filters.Start, window.filters.End, run.runId],
            );
            return NO_ROWS;
          },
          last: ids.length === 0,
          advance(w) {
            w.extra = { eventTypeIds: ids, done: 0 };
          },
          progress: { page: 0, rows: ids.length },
        };
        position.eventTypeIds = ids;
      }
      const eventTypeIds = position.eventTypeIds;
      const limit = pLimit(source.concurrency);
      for (let i = position.done; i < eventTypeIds.length; i++) {
        const eventTypeId = eventTypeIds[i]!;
        const read = await readEventType(client, source, session, run, window, eventTypeId, limit);
        yield {
          async write(tx) {
            const inserted = await insertEventType(tx, source.name, capturedAt, run.runId, eventTypeId, read);
            await quarantine(tx, source.name, stream.resource, run.runId, read.rejected);
            return { inserted, updated: 0, unchanged: 0, rejected: read.rejected.length };
          },
          last: i + 1 === eventTypeIds.length,
          advance(w) {
            w.extra = { eventTypeIds, done: i + 1 };
          },
          progress: { page: i + 1, rows: read.providers.length },
        };
      }
    },

    async complete(tx, window) {
      await tx.query('UPDATE pro_availability_captures SET completed_at = now() WHERE source = $1 AND captured_at = $2', [
        source.name,
        new Date(window.end),
      ]);
    },
  };
}

async function readEventTypeIds(client: HttpClient, source: ProSourceConfig, session: ProSession, run: RunScope): Promise<number[]> {
  const ids = new Set<number>();
  const pages = pageProList(
    (page, limit) => client.get(practicePath(source, '/event-types'), { Page: page, Limit: limit }, run.get),
    pagerOptions(run, source, session, 'eventTypeId'),
  );
  for await (const page of pages) {
    session.practiceConfirmed = true;
    for (const raw of page.records) {
      const parsed = eventTypes.raw.safeParse(raw);
      // An invalid event type is set aside by the event-types stream; the capture goes on without it.
      if (parsed.success) ids.add(parsed.data.eventTypeId as number);
    }
  }
  return [...ids].sort((a, b) => a - b);
}

interface ProviderRead extends ProviderEntryRow {
  raw: unknown;
  slotGroups: unknown[];
  slots: string[];
  fetchedAt: Date;
}

interface EventTypeRead {
  providers: ProviderRead[];
  rejected: Rejected[];
}

async function readAll(
  client: HttpClient,
  source: ProSourceConfig,
  session: ProSession,
  run: RunScope,
  path: string,
  query: Record<string, string | number>,
  idOf: (raw: unknown) => string | null,
) {
  const records: unknown[] = [];
  let sentAt: Date | null = null;
  const pages = pageProList(
    (page, limit) => client.get(practicePath(source, path), { ...query, Page: page, Limit: limit }, run.get),
    pagerOptions(run, source, session, idOf),
  );
  for await (const page of pages) {
    sentAt ??= page.sentAt;
    records.push(...page.records);
  }
  return { records, sentAt: sentAt ?? new Date() };
}

const providerIdOf = (raw: unknown): string | null => idReader('providerId')((raw as { provider?: unknown } | null)?.provider ?? null);

async function readEventType(
  client: HttpClient,
  source: ProSourceConfig,
  session: ProSession,
  run: RunScope,
  window: WindowCheckpoint,
  eventTypeId: number,
  limit: ReturnType<typeof pLimit>,
): Promise<EventTypeRead> {
  const rejected: Rejected[] = [];
  const entries = await readAll(
    client,
    source,
    session,
    run,
    '/scheduling/availability/providers',
    { EventTypeId: eventTypeId },
    providerIdOf,
  );
  const providers = new Map<number, { row: ProviderEntryRow; raw: unknown }>();
  for (const raw of entries.records) {
    const parsed = providerEntryRaw.safeParse(raw);
    const unstorable = unstorableReason(raw);
    if (unstorable !== null || !parsed.success) {
      rejected.push({
        recordId: `providers:${eventTypeId}:${providerIdOf(raw) ?? '?'}`,
        raw,
        reason: unstorable ?? describeIssues(parsed.error!),
      });
      continue;
    }
    const row = mapProviderEntry(parsed.data);
    providers.set(row.providerId, { row, raw });
  }
  const reads = await allSettledOrThrow(
    [...providers.values()].map(({ row, raw }) =>
      limit(async (): Promise<ProviderRead> => {
        const query = { EventTypeId: eventTypeId, ProviderId: row.providerId, Start: window.filters.Start!, End: window.filters.End! };
        const groups = await readAll(client, source, session, run, '/scheduling/availability/slots', query, idReader('providerId'));
        const slots = new Set<string>();
        const mine: unknown[] = [];
        for (const group of groups.records) {
          const parsed = slotGroupRaw.safeParse(group);
          const unstorable = unstorableReason(group);
          if (unstorable !== null || !parsed.success) {
            rejected.push({
              recordId: `slots:${eventTypeId}:${row.providerId}`,
              raw: group,
              reason: unstorable ?? describeIssues(parsed.error!),
            });
            continue;
          }
          const mapped = mapSlotGroup(parsed.data);
          // A group naming another provider belongs to that provider's own request.
          if (mapped.providerId !== null && mapped.providerId !== row.providerId) continue;
          mine.push(group);
          for (const s of mapped.slots) slots.add(s);
        }
        return { ...row, raw, slotGroups: mine, slots: [...slots].sort(), fetchedAt: groups.sentAt };
      }),
    ),
  );
  return { providers: reads, rejected };
}

/** Appends one event type's rows to the capture; returns how many rows were added. */
async function insertEventType(
  tx: Queryable,
  source: string,
  capturedAt: Date,
  runId: number,
  eventTypeId: number,
  read: EventTypeRead,
): Promise<number> {
  const providerRows = read.providers.map((p) => ({
    provider_id: p.providerId,
    first_name: p.firstName,
    last_name: p.lastName,
    open_slots: p.slots.length,
    raw: p.raw,
    slots_raw: p.slotGroups,
    fetched_at: p.fetchedAt.toISOString(),
  }));
  const slotRows = read.providers.flatMap((p) => p.slots.map((slot) => ({ provider_id: p.providerId, slot_at: slot })));
  const a = await tx.query(
    `INSERT INTO pro_availability_providers (source, captured_at, event_type_id, provider_id, first_name, last_name, open_slots, raw, slots_raw, fetched_at, run_id)
     SELECT $1, $2, $3, r.provider_id, r.first_name, r.last_name, r.open_slots, r.raw, r.slots_raw, r.fetched_at, $4
     FROM jsonb_to_recordset($5::jsonb) AS r(provider_id bigint, first_name text, last_name text, open_slots integer, raw jsonb, slots_raw jsonb, fetched_at timestamptz)
     ON CONFLICT DO NOTHING`,
    [source, capturedAt, eventTypeId, runId, JSON.stringify(providerRows)],
  );
  const b = await tx.query(
    `INSERT INTO pro_availability_slots (source, captured_at, event_type_id, provider_id, slot_at, run_id)
     SELECT $1, $2, $3, r.provider_id, r.slot_at, $4 FROM jsonb_to_recordset($5::jsonb) AS r(provider_id bigint, slot_at timestamp)
     ON CONFLICT DO NOTHING`,
    [source, capturedAt, eventTypeId, runId, JSON.stringify(slotRows)],
  );
  await tx.query(
    `UPDATE pro_availability_captures SET event_types = event_types + 1, providers = providers + $3, slots = slots + $4 WHERE source = $1 AND captured_at = $2`,
    [source, capturedAt, a.rowCount ?? 0, b.rowCount ?? 0],
  );
  return (a.rowCount ?? 0) + (b.rowCount ?? 0);
}
