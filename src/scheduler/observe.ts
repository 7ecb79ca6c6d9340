/**
 * What the scheduler decides from: the inputs of a source, read from state
 * (its streams' schedules, checkpoints, notifications, the windows its recent
 * checks read, its change models and costs, its health and quota) in one
 * batch for many sources (readSources, readModels), and turned at any instant
 * into the pure plan's input (src/scheduler/budget.ts) and planned (viewAt).
 * No side effects: `pmsync status` and the metrics observe a source as the
 * scheduler does.
 */

import type { SourceConfig } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import { pagesLeft } from '../api/pager.ts';
import { HALF_LIFE_DAYS, loadStreamModels, type StoredSlot } from '../state/change-model.ts';
import { readCheckpointsOf, type StoredCheckpoint } from '../state/checkpoints.ts';
import { quotaSnapshots, type QuotaLedger, type QuotaSnapshot } from '../state/quota.ts';
import { atWorkSinceOf, changesFoundOf, recentCheckCostsOf, recentWindowsOf, type AtWork } from '../state/runs.ts';
import { loadSourceHealthOf, readSourceHealth, type SourceHealth } from '../state/source-health.ts';
import { webhooksUntilOf } from '../state/webhook-secrets.ts';
import type { StreamPairs } from '../state/stream-pairs.ts';
import { loadStreamSchedulesOf, notifiedOf, type NotifiedReading, type StreamScheduleRow } from '../state/stream-schedule.ts';
import type { Purpose } from '../api/http.ts';
import { nextFire, previousFire } from '../cron.ts';
import {
  hoursKnown,
  MINOR_SHARE,
  NO_NOTIFICATIONS,
  planSource,
  type Notified,
  type PinnedInput,
  type SourceInput,
  type SourcePlan,
  type StreamInput,
} from './budget.ts';
import { forEachSlotPiece, localDayStart, nextLocalMidnight, nextSlotEdge, slotOf } from '../time.ts';
import { sourceTimeZone, type ScheduledStream } from './plan.ts';
import {
  decaysOf,
  EVIDENCE_LOOKBACK_HOURS,
  evidenceOf,
  expectedSince,
  hourOfDay,
  hoursShown,
  type HourOfDay,
  practiceExcess,
  surprisesFound,
  slotRates,
  slotRatesWithMoved,
  withPracticeHours,
  type RecentHours,
  withEvidence,
  withExcess,
  type Evidence,
  type StreamWindows,
  type WindowFound,
} from './rates.ts';
import { derivedFrom, keptWith } from './kept.ts';
import { pinnedInput } from './pinned.ts';
import { openingLookOn, openingOn, spreadOverHours, statedHours, type StatedHours } from './hours.ts';
import { CHECK_COST_RUNS as COST_RUNS } from '../state/runs.ts';
import { SLOTS } from '../state/change-model.ts';
import type { ScheduleSettings } from '../config/schedules.ts';

/**
 * A source is read again at least this often, whatever the change log says:
 * a change whose transaction committed long after it took its number (see
 * src/state/source-changes.ts) is seen within this bound. The practice's
 * shared excess is read as of the reading (sharedExcess), so the wake ends a
 * segment here too (src/scheduler/wake.ts): a source is read again at the
 * same tick whether it is planned at every tick or only when it can change.
 */
export const REREAD_MS = 3_600_000;

/** A stream fed by webhooks is one that received a notification within this long. */
export const WEBHOOK_LOOKBACK_MS = 24 * 3_600_000;
/**
 * The rates of a stream with no model yet: the prior alone, the same at every instant (slotRates of nothing
 * stored never reads the clock). Made once; nothing writes into rates arrays (each derivation copies).
 */
const NO_MODEL_RATES = slotRates([], new Date(0));
/** Recent windows of a stream that today's evidence is read from. */
const EVIDENCE_RUNS = 8;
/** A stream with no windows read: one list for all of them, so what is kept with a list is kept with it too. */
const NO_WINDOWS: WindowFound[] = Object.freeze([]) as unknown as WindowFound[];

/** A pinned stream's cron fire, due now. */
export interface CronFire {
  stream: ScheduledStream;
  at: Date;
  purpose: Purpose;
  reason: string;
}

/** What the scheduler sees and decides for one source at one instant (status and metrics read it too). */
export interface SourceView {
  source: string;
  at: Date;
  quota: QuotaSnapshot;
  plan: SourcePlan;
  /** What the plan was made from (status estimates next checks from it). */
  input: SourceInput;
  /** The source's streams under serve, with their schedule (off ones included). */
  streams: ScheduledStream[];
  /** What the plan was given for each budget stream. */
  inputs: Map<string, StreamInput>;
  rows: Map<string, StreamScheduleRow>;
  cronFires: CronFire[];
  /** When each pinned stream fires next. */
  nextFires: Map<string, Date | null>;
  /** The source's failures and pause (null: never recorded, healthy). */
  health: SourceHealth | null;
  /** Nothing of the source is dispatched before this (its failure backoff); null when not paused at `at`. */
  pausedUntil: Date | null;
  /** Some budget stream has not been read yet today: its activity is held at its usual forecast until it is. */
  unreadToday: boolean;
  /** Today's working day as its notifications show it, for a practice whose hours do not show yet (workdayOf). */
  workday: Workday | null;
  /**
   * For a practice whose hours do not show yet and that sends no notifications: the first change its checks found
   * today (atWorkSince): its streams' rates are measured from there, and those last checked before it are checked
   * once since; null before one.
   */
  atWorkSince: Date | null;
  /**
   * For such a practice, once found at work: the end of the longest working day it may have today (longestDayEnd), to
   * which its streams' rates hold; null otherwise.
   */
  atWorkUntil: Date | null;
  /**
   * The practice is planned by the hours its operator stated (the source's `hours`, hours.ts): its changes do not
   * show its own yet.
   */
  hoursStated: boolean;
}

export interface ObserveDeps {
  pool: Pool;
  ledgerFor(source: SourceConfig): QuotaLedger;
  settings: ScheduleSettings;
}

/**
 * What the decisions for one source are made from, as read from state at one
 * instant (`at`), in a form that holds for later instants: viewAt derives the
 * plan's inputs at any instant from it, so a source is read again only when
 * one of its rows changes (src/state/source-changes.ts) or its quota day
 * turns, and planned at the instants its plan can change.
 */
export interface SourceReadings {
  /** When it was read: its quota day, and the lookbacks of notifications and windows, start from here. */
  at: Date;
  /** The quota ledger as of `at`. */
  quota: QuotaSnapshot;
  rows: Map<string, StreamScheduleRow>;
  states: Map<string, StreamStateLite>;
  notified: Map<string, NotifiedReading>;
  /** Rows each stream's checks found changed today. */
  found: Map<string, number>;
  /** What each stream's checks read of the practice's day since its local midnight (runs.ts, atWorkSinceOf). */
  atWork: Map<string, AtWork>;
  windows: Map<string, WindowFound[]>;
  /** Requests a check of each stream took lately. */
  costs: Map<string, number>;
  /** Until when webhooks are registered for the source (Infinity: no expiry); null: none are. */
  webhooksUntil: number | null;
  health: SourceHealth | null;
}

/**
 * One stream's change rates as read from its learned model (src/state/change-model.ts).
 * Kept as rates rather than the stored slots they come from: a fleet's
 * scheduler keeps this for every stream, and 168 numbers a stream are a few
 * kB where the slots as rows took about 25 kB. Read again when the stream's
 * model changes (after each of its checks) and when the practice's weekday
 * turns: its recent profile leaves today's own hours out.
 */
export interface ModelReading {
  /** The instant the rates are as of. */
  at: number;
  /** The practice's weekday they were read for (0 = Sunday). */
  today: number;
  /** Changes per hour in each slot of the week. */
  rates: Float64Array;
  /** Slots the recent days raised above the long memory: hours the practice moved into. */
  movedIn: Uint8Array;
  /** Its changes and exposure by hour of the day: whether the practice's hours show (rates.ts, hoursShown). */
  byHour?: HourOfDay;
  /** What its recent days said of each hour against its long memory: read with the practice's other streams (withPracticeHours). */
  recent?: RecentHours;
}

/** The practice's weekday now (0 = Sunday): its recent profile is read without today's own hours. */
export function localWeekday(now: Date, timeZone: string): number {
  return Math.floor(slotOf(now.getTime(), timeZone) / 24);
}

/** A stream's model read at `at` in the practice's zone. */
export function modelReading(slots: StoredSlot[], at: Date, timeZone: string): ModelReading {
  const today = localWeekday(at, timeZone);
  const decay = decaysOf(slots, at, HALF_LIFE_DAYS);
  const r = slotRatesWithMoved(slots, at, today, decay);
  return { at: at.getTime(), today, rates: r.rates, movedIn: r.movedIn, byHour: hourOfDay(slots, at, today, decay), recent: r.recent };
}

/** Each set of a source's models read with the practice's hours (practiceModels), kept with it. */
const practiceCache = new WeakMap<Map<string, ModelReading>, Map<string, ModelReading>>();

/**
 * A source's models with the practice's hours read from all of them (rates.ts, withPracticeHours): what each stream's
 * recent days alone were too few to say. Kept with the models: read again when one of them is.
 */
export function practiceModels(models: Map<string, ModelReading>): Map<string, ModelReading> {
  const kept = practiceCache.get(models);
  if (kept) return kept;
  const entries = [...models];
  const read = withPracticeHours(entries.map(([, m]) => m));
  let out = models;
  entries.forEach(([resource, m], i) => {
    const { rates, movedIn } = read[i]!;
    if (rates === m.rates && movedIn === m.movedIn) return;
    if (out === models) out = new Map(models);
    out.set(resource, { ...m, rates, movedIn });
  });
  practiceCache.set(models, out);
  return out;
}

/**
 * Streams whose stored slots are read by one query. A stream's 168 rows are
 * about 50 KB as the driver returns them and 3 KB once read into its rates:
 * reading every stream of a fleet at once (a replica's first tick, the local
 * midnight at which every model turns to the next weekday) held them all at
 * once, and set the replicas' peak memory. In batches, at most this many
 * streams' rows are held at a time.
 */
export const MODEL_BATCH_STREAMS = 200;

/** The models of many sources' streams, a batch of streams a query: source -> resource -> reading (streams never observed have none). */
export async function readModels(
  pool: Pool,
  streams: ReadonlyArray<{ source: string; resource: string }>,
  at: Date,
  timeZoneOf: (source: string) => string,
): Promise<Map<string, Map<string, ModelReading>>> {
  const sources = [...new Set(streams.map((s) => s.source))];
  const out = new Map<string, Map<string, ModelReading>>(sources.map((s) => [s, new Map()]));
  for (let i = 0; i < streams.length; i += MODEL_BATCH_STREAMS) {
    const stored = await loadStreamModels(pool, streams.slice(i, i + MODEL_BATCH_STREAMS));
    for (const [source, models] of stored) {
      for (const [resource, slots] of models) out.get(source)!.set(resource, modelReading(slots, at, timeZoneOf(source)));
    }
  }
  return out;
}

/** What readSources reads stream by stream, for many sources at once. */
interface StreamParts {
  rows: Map<string, Map<string, StreamScheduleRow>>;
  states: Map<string, StoredCheckpoint[]>;
  notified: Map<string, Map<string, NotifiedReading>>;
  found: Map<string, Map<string, number>>;
  atWork: Map<string, Map<string, AtWork>>;
  windows: Map<string, Map<string, WindowFound[]>>;
  /** By stream key (source/resource). */
  costs: Map<string, number>;
}

/**
 * The per-stream state of some sources (each with the start of its quota
 * day), one query per kind: every stream of them, or with `only` those
 * streams alone. Costs are read for `priced` (configured streams).
 */
async function readStreamParts(
  pool: Pool,
  dayStarts: ReadonlyArray<{ source: string; dayStart: Date; localDayStart: Date }>,
  priced: ReadonlyArray<{ source: string; resource: string }>,
  at: Date,
  only?: StreamPairs,
): Promise<StreamParts> {
  const names = dayStarts.map((d) => d.source);
  const [rows, states, notified, found, atWork, windows, costs] = await Promise.all([
    loadStreamSchedulesOf(pool, names, only),
    readCheckpointsOf(pool, names, only),
    notifiedOf(pool, dayStarts, new Date(at.getTime() - WEBHOOK_LOOKBACK_MS), at, only),
    changesFoundOf(
      pool,
      dayStarts.map((d) => ({ source: d.source, since: d.dayStart })),
      only,
    ),
    atWorkSinceOf(
      pool,
      dayStarts.map((d) => ({ source: d.source, since: d.localDayStart })),
      WORKDAY_MIN_RUN,
      only,
    ),
    recentWindowsOf(pool, names, new Date(at.getTime() - EVIDENCE_LOOKBACK_HOURS * 3_600_000), EVIDENCE_RUNS, only),
    priced.length > 0 ? recentCheckCostsOf(pool, priced, COST_RUNS) : new Map<string, number>(),
  ]);
  return { rows, states, notified, found, atWork, windows, costs };
}

/** The checkpoint of a stream as the plan takes it. */
function stateLite(r: StoredCheckpoint): StreamStateLite {
  const paging = r.window?.paging;
  return { cursor: r.cursor, open: r.open, pagesLeft: paging ? pagesLeft(paging) : null };
}

/** The configured streams of each source, by source, from a set of the names (a fleet's every stream against every source is quadratic). */
function streamsBySource(names: readonly string[], streams: readonly ScheduledStream[]): Map<string, ScheduledStream[]> {
  const named = new Set(names);
  const out = new Map<string, ScheduledStream[]>();
  for (const s of streams) {
    if (!named.has(s.source)) continue;
    const list = out.get(s.source);
    if (list) list.push(s);
    else out.set(s.source, [s]);
  }
  return out;
}

/**
 * Reads what the decisions for many sources depend on, with one query per
 * kind of state whatever their number (the models aside: readModels).
 */
export async function readSources(
  deps: Pick<ObserveDeps, 'pool' | 'ledgerFor'>,
  sources: readonly SourceConfig[],
  streams: readonly ScheduledStream[],
  at: Date,
): Promise<Map<string, SourceReadings>> {
  const { pool } = deps;
  const names = sources.map((s) => s.name);
  const quotas = await quotaSnapshots(
    pool,
    sources.map((s) => deps.ledgerFor(s).settings),
    at,
  );
  const dayStarts = sources.map((source, i) => ({
    source: source.name,
    dayStart: quotas[i]!.startsAt,
    localDayStart: new Date(localDayStart(at.getTime(), sourceTimeZone(source))),
  }));
  const streamsOf = streamsBySource(names, streams);
  const [parts, hooks, health] = await Promise.all([
    readStreamParts(pool, dayStarts, [...streamsOf.values()].flat(), at),
    webhooksUntilOf(pool, names, at),
    names.length === 1
      ? readSourceHealth(pool, names[0]!).then((h) => new Map(h ? [[names[0]!, h]] : []))
      : loadSourceHealthOf(pool, names),
  ]);
  const out = new Map<string, SourceReadings>();
  sources.forEach((source, i) => {
    const name = source.name;
    const streamCosts = new Map<string, number>();
    for (const s of streamsOf.get(name) ?? []) {
      const cost = parts.costs.get(s.key);
      if (cost !== undefined) streamCosts.set(s.resource, Math.max(1, cost));
    }
    out.set(name, {
      at,
      quota: quotas[i]!,
      rows: parts.rows.get(name) ?? new Map(),
      states: new Map((parts.states.get(name) ?? []).map((r) => [r.resource, stateLite(r)])),
      notified: parts.notified.get(name) ?? new Map(),
      found: parts.found.get(name) ?? new Map(),
      atWork: parts.atWork.get(name) ?? new Map(),
      windows: parts.windows.get(name) ?? new Map(),
      costs: streamCosts,
      webhooksUntil: hooks.get(name) ?? null,
      health: health.get(name) ?? null,
    });
  });
  return out;
}

/**
 * Whether a source read at `readings.at` can be brought to `at` by reading
 * again only its streams whose rows changed (readSourcesAgain) and get what
 * readSources would read at `at`. What is read of a stream whose rows did not
 * change moves with the clock in two ways only: its windows leave the
 * evidence's lookback, which is applied to what was read; and its
 * notifications leave theirs, which an aggregate cannot be cut to: when one
 * of its pending notifications, or its latest, would leave it (or the quota
 * day, whose notifications are counted, is longer than the lookback), or the
 * quota day turned, the source is read whole.
 */
export function canReadInPart(readings: SourceReadings, at: Date): boolean {
  const t = at.getTime();
  const since = t - WEBHOOK_LOOKBACK_MS;
  if (t >= readings.quota.resetsAt.getTime() || readings.quota.startsAt.getTime() <= since) return false;
  for (const n of readings.notified.values()) {
    if (n.oldest && n.oldest.getTime() <= since) return false;
    if (n.latestReceived && n.latestReceived.getTime() <= since) return false;
  }
  return true;
}

/** Sets `resource` of `map` to `value`, or removes it when there is none: a stream read again with no row has none. */
function putOrDrop<V>(map: Map<string, V>, resource: string, value: V | undefined): void {
  if (value === undefined) map.delete(resource);
  else map.set(resource, value);
}

/**
 * Sources read before (each with what was read of it, which canReadInPart
 * allowed at `at`, and the resources whose rows changed since), brought to
 * `at`: the quota ledger, health and webhook registrations read again whole
 * (a row a source), the changed streams' state read again, the other streams'
 * kept, their windows cut to the lookback as of `at`. The same readings
 * readSources gives at `at`, from a fraction of the rows: a run ends for one
 * or two of a source's ten streams.
 */
export async function readSourcesAgain(
  deps: Pick<ObserveDeps, 'pool' | 'ledgerFor'>,
  again: ReadonlyArray<{ source: SourceConfig; readings: SourceReadings; resources: ReadonlySet<string> }>,
  streams: readonly ScheduledStream[],
  at: Date,
): Promise<Map<string, SourceReadings>> {
  const { pool } = deps;
  const names = again.map((a) => a.source.name);
  const quotas = await quotaSnapshots(
    pool,
    again.map((a) => deps.ledgerFor(a.source).settings),
    at,
  );
  const only = again.flatMap((a) => [...a.resources].map((resource) => ({ source: a.source.name, resource })));
  const streamsOf = streamsBySource(names, streams);
  const priced = again.flatMap((a) => (streamsOf.get(a.source.name) ?? []).filter((s) => a.resources.has(s.resource)));
  // The sources some of whose streams are read again, each with its quota day's start.
  const dayStarts = again.flatMap((a, i) =>
    a.resources.size > 0
      ? [
          {
            source: a.source.name,
            dayStart: quotas[i]!.startsAt,
            localDayStart: new Date(localDayStart(at.getTime(), sourceTimeZone(a.source))),
          },
        ]
      : [],
  );
  const [parts, hooks, health] = await Promise.all([
    only.length > 0 ? readStreamParts(pool, dayStarts, priced, at, only) : null,
    webhooksUntilOf(pool, names, at),
    loadSourceHealthOf(pool, names),
  ]);
  const cutoff = at.getTime() - EVIDENCE_LOOKBACK_HOURS * 3_600_000;
  const out = new Map<string, SourceReadings>();
  again.forEach(({ source, readings: before, resources }, i) => {
    const name = source.name;
    const rows = new Map(before.rows);
    const states = new Map(before.states);
    const notified = new Map(before.notified);
    const found = new Map(before.found);
    const atWork = new Map(before.atWork);
    const costs = new Map(before.costs);
    // Windows of the streams kept, as a read at `at` would find them: those ending within its lookback.
    const windows = new Map<string, WindowFound[]>();
    for (const [resource, list] of before.windows) {
      if (resources.has(resource)) continue;
      const kept = list.filter((w) => w.to >= cutoff);
      if (kept.length > 0) windows.set(resource, kept.length === list.length ? list : kept);
    }
    if (parts) {
      const freshStates = new Map((parts.states.get(name) ?? []).map((r) => [r.resource, stateLite(r)]));
      for (const resource of resources) {
        putOrDrop(rows, resource, parts.rows.get(name)?.get(resource));
        putOrDrop(states, resource, freshStates.get(resource));
        putOrDrop(notified, resource, parts.notified.get(name)?.get(resource));
        putOrDrop(found, resource, parts.found.get(name)?.get(resource));
        putOrDrop(atWork, resource, parts.atWork.get(name)?.get(resource));
        putOrDrop(windows, resource, parts.windows.get(name)?.get(resource));
      }
      // Costs are kept for configured streams only, as readSources keeps them.
      for (const s of streamsOf.get(name) ?? []) {
        if (!resources.has(s.resource)) continue;
        const cost = parts.costs.get(s.key);
        putOrDrop(costs, s.resource, cost === undefined ? undefined : Math.max(1, cost));
      }
    }
    out.set(name, {
      at,
      quota: quotas[i]!,
      rows,
      states,
      notified,
      found,
      atWork,
      windows,
      costs,
      webhooksUntil: hooks.get(name) ?? null,
      health: health.get(name) ?? null,
    });
  });
  return out;
}

/**
 * Reads everything the decisions for one source depend on, and plans. No
 * side effects: `pmsync status` and the metrics call it as the scheduler does.
 */
export async function observeSource(
  deps: ObserveDeps,
  source: SourceConfig,
  streams: ScheduledStream[],
  now: Date,
  inFlight: Set<string>,
): Promise<SourceView> {
  const [readings, models] = await Promise.all([
    readSources(deps, [source], streams, now),
    readModels(deps.pool, streams, now, () => sourceTimeZone(source)),
  ]);
  return viewAt(source, streams, readings.get(source.name)!, models.get(source.name) ?? new Map(), now, inFlight, deps.settings);
}

/** The quota ledger as of `now`, from what was read at `readings.at` (a later quota day starts with nothing spent). */
function quotaAt(q: QuotaSnapshot, now: Date): QuotaSnapshot {
  if (now.getTime() >= q.resetsAt.getTime()) {
    const byPurpose = Object.fromEntries(Object.keys(q.byPurpose).map((p) => [p, 0])) as QuotaSnapshot['byPurpose'];
    return {
      ...q,
      used: 0,
      byPurpose,
      budgetUsed: 0,
      exhaustedUntil: null,
      startsAt: q.resetsAt,
      resetsAt: new Date(q.resetsAt.getTime() + 24 * 3_600_000),
    };
  }
  return q.exhaustedUntil && q.exhaustedUntil.getTime() <= now.getTime() ? { ...q, exhaustedUntil: null } : q;
}

/** The pending notifications of a stream as of `now`: their summed age then. */
function notifiedAt(n: NotifiedReading | undefined, now: Date): Notified {
  if (!n || n.pending <= 0) return NO_NOTIFICATIONS;
  return {
    count: n.pending,
    oldest: n.oldest,
    ageMinutes: Math.max(0, (n.pending * now.getTime() - n.receivedSumMs) / 60_000),
    latestEvent: n.latestEvent,
  };
}

/**
 * What the scheduler sees and decides for one source at `now`, from what was
 * read of it (at or before `now`). Pure: the same readings and instant give the
 * same view, so a source can be planned at any instant without reading it again.
 */
export function viewAt(...args: Parameters<typeof sightAt>): SourceView {
  const view = sightAt(...args) as SourceView;
  view.plan = planSource(view.input);
  return view;
}

/** What a source looks like at `now` (viewAt), the plan left out: what the plan would be made from. */
export type SourceSight = Omit<SourceView, 'plan'>;

/** viewAt without the plan: the plan's input and the rest of the view. Pure, as viewAt. */
export function sightAt(
  source: SourceConfig,
  streams: ScheduledStream[],
  readings: SourceReadings,
  models: Map<string, ModelReading>,
  now: Date,
  inFlight: Set<string>,
  settings: ScheduleSettings,
): SourceSight {
  models = practiceModels(models);
  const { rows, states, health } = readings;
  const quota = quotaAt(readings.quota, now);
  const pausedUntil = health?.pausedUntil && health.pausedUntil > now ? health.pausedUntil : null;
  const timeZone = sourceTimeZone(source);
  const fed = (resource: string) => fedAt(readings, resource, now);

  // Pinned streams: their cron fires, whatever the plan; and what they will spend today.
  const pinned: PinnedInput[] = [];
  const cronFires: CronFire[] = [];
  const nextFires = new Map<string, Date | null>();
  for (const s of streams) {
    if (s.schedule.mode !== 'cron') continue;
    pinned.push(pinnedInput(s, readings.costs.get(s.resource) ?? 1, now, quota.resetsAt)!);
    nextFires.set(s.resource, nextFire(s.schedule.cron, s.schedule.timeZone, now));
    if (inFlight.has(s.key)) continue;
    const fire = previousFire(s.schedule.cron, s.schedule.timeZone, now);
    const row = rows.get(s.resource);
    const last = row?.lastFireAt ?? null;
    const state = states.get(s.resource);
    const held = row?.pausedUntil && row.pausedUntil > now;
    if (fire && (!last || last < fire)) {
      cronFires.push({
        stream: s,
        at: fire,
        purpose: isBackfill(state) ? 'backfill' : s.kind === 'full' ? 'full' : 'check',
        reason: last ? 'cron' : 'cron (first fire)',
      });
    } else if (state?.open && !held && last) {
      // A run stopped part-way (shutdown, crash) resumes at once, not at the next fire.
      cronFires.push({ stream: s, at: new Date(Math.max(now.getTime(), last.getTime() + 1)), purpose: 'backfill', reason: 'resume' });
    }
  }

  // A polled stream's windows are read from their first change (rates.ts, splitAtFirstChange): a check after quiet
  // hours that finds a rush's first minutes says the rush's rate. A stream fed by webhooks is checked a few minutes
  // after each change is notified, so its windows start at its changes already, and are read whole.
  const windowsOf = (resource: string): WindowFound[] => {
    const list = readings.windows.get(resource) ?? NO_WINDOWS;
    return fed(resource) ? readWhole(list) : list;
  };
  // Each budget stream's forecast (its model scaled by today's activity) and its own evidence first:
  // the practice-wide excess is read from all of them.
  const forecasts = new Map<string, { model: Float64Array; forecast: Float64Array; activity: number; evidence: Evidence | null }>();
  let unreadToday = false;
  // Hours its operator stated stand for the practice's own until its changes show them: its models' changes are
  // spread over them (hours.ts, spreadOverHours), and it is planned as a practice whose hours are known.
  const stated = statedHours(source);
  const { slots: activeSlots, useStated } = activeSlotsOf(streams, models, stated);
  const spreadOver = useStated ? stated : null;
  const webhooksRegistered = readings.webhooksUntil !== null && readings.webhooksUntil > now.getTime();
  // A practice whose hours do not show yet reads its working day from what today shows: its notifications when it
  // sends them, else when its checks found it at work. Those say when its day began, and too little of when it will
  // end to price its evening by (closingRange): a practice working eleven hours spent its budget by its last hour
  // and left changes unread, so its streams' rates are taken to hold to the end of the day, and fall as its checks
  // find less.
  const hoursUnknown = !hoursKnown(activeSlots);
  const workday = hoursUnknown && webhooksRegistered ? workdayOf(readings.notified.values(), localDayStart(now.getTime(), timeZone)) : null;
  const checkedDayStart = hoursUnknown && !webhooksRegistered ? localDayStart(now.getTime(), timeZone) : null;
  const atWork = checkedDayStart === null ? null : atWorkSince(readings.atWork.values(), checkedDayStart, now.getTime());
  // A practice planned by its stated hours without webhooks reads its day from its checks too, from its stated
  // opening: its model, read from a first pass, says which streams change and little of how often.
  const statedOpening = spreadOver && !webhooksRegistered ? openingOn(spreadOver, now.getTime(), timeZone) : null;
  const openedAt = statedOpening !== null && now.getTime() > statedOpening ? statedOpening : null;
  const dayStart = checkedDayStart ?? (openedAt !== null ? localDayStart(now.getTime(), timeZone) : null);
  const foundAtWork = atWork !== null && now.getTime() > atWork;
  // Where the working day's weights stop: the quota day's end, or the practice's next midnight if sooner (once a plan).
  const workdayEnd = workday || foundAtWork ? Math.min(quota.resetsAt.getTime(), nextLocalMidnight(now.getTime(), timeZone)) : 0;
  // A practice found at work by its checks is planned to the end of the longest working day it may have (withLongestDay):
  // paced to midnight, a practice that closes at 19:00 held a third of its day's budget for an evening that never
  // came. Paced to the end of its longest day, not by the chance it is still open hour by hour, which spends the
  // afternoon's budget on a closing that has not come (closingRange, tried: bench/RESULTS.md).
  const checkedDay: Workday | null = foundAtWork
    ? { from: atWork, last: latestAtWork(readings.windows.values(), atWork, now.getTime()) }
    : null;
  for (const s of streams) {
    if (s.schedule.mode !== 'budget') continue;
    const f = forecastOf(s.resource, readings, models, timeZone, quota, now, workday?.from, spreadOver, webhooksRegistered);
    if (!f.readToday) unreadToday = true;
    if (workday && fed(s.resource)) {
      // Its notifications say both how busy the practice is today and that it is still at work: its rate is theirs.
      const today = notifiedRate(readings.notified.get(s.resource), workday, now.getTime(), f.model[slotOf(now.getTime(), timeZone)]!);
      const flat = new Float64Array(SLOTS).fill(today);
      forecasts.set(s.resource, {
        model: f.model,
        forecast: withWorkday(flat, timeZone, now.getTime(), workdayEnd, workday),
        activity: f.activity,
        evidence: null,
      });
      continue;
    }
    const since = atWork !== null && now.getTime() > atWork ? atWork : openedAt;
    if (since !== null) {
      // Its checks say how busy the practice is today since it was found at work: the stream's rate is the changes
      // they found since its local midnight (not since the quota day began, which may take in last evening's) over
      // the hours since it was found at work (with the model's rate for the first minutes), for the rest of the day.
      // Its model, spread round the clock, prices the open hours at a fraction of that: checked by its busy-hours
      // interval in the hours the evidence raised and no others, a stream was checked every two minutes all morning.
      // Stated hours say when it closes: the rate holds in them only. And its hours are those its checks have read:
      // a stream not checked since a look that found nothing in the opening minutes would otherwise be priced lower
      // with every hour it is not checked, and never be checked again.
      const last = since === openedAt ? (rows.get(s.resource)?.lastCheckAt ?? states.get(s.resource)?.cursor ?? null) : null;
      const readUntil = last === null ? now.getTime() : Math.max(since, Math.min(now.getTime(), last.getTime()));
      const hours = (readUntil - since) / 3_600_000;
      const model = f.model[slotOf(now.getTime(), timeZone)]!;
      const read = readings.atWork.get(s.resource);
      const found = read && read.day.getTime() === dayStart ? read.found : 0;
      const today = (found + NOTIFIED_RATE_PRIOR_HOURS * model) / (hours + NOTIFIED_RATE_PRIOR_HOURS);
      const flat = new Float64Array(SLOTS);
      if (since === openedAt && spreadOver) for (let i = 0; i < SLOTS; i++) flat[i] = spreadOver.slots[i] ? today : 0;
      else flat.fill(today);
      const forecast = checkedDay && since === atWork ? withLongestDay(flat, timeZone, now.getTime(), workdayEnd, checkedDay) : flat;
      forecasts.set(s.resource, {
        model: f.model,
        forecast,
        activity: f.activity,
        evidence: evidenceOf(forecast, timeZone, windowsOf(s.resource), now.getTime()),
      });
      continue;
    }
    const evidence = evidenceOf(f.forecast, timeZone, windowsOf(s.resource), now.getTime());
    const forecast = workday ? withWorkday(f.forecast, timeZone, now.getTime(), workdayEnd, workday) : f.forecast;
    forecasts.set(s.resource, { model: f.model, forecast, activity: f.activity, evidence });
  }
  const practice = streams
    .filter((s) => s.kind === 'incremental' && forecasts.has(s.resource))
    .map((s) => {
      const f = forecasts.get(s.resource)!;
      return {
        resource: s.resource,
        forecast: f.forecast,
        windows: windowsOf(s.resource),
        usualPerWeek: usualPerWeek(f.model),
      };
    });
  const excessFrom = excessAt(readings);
  const shared = sharedExcess(source, streams, readings, models, excessFrom);
  const surprises = surprisesFound(practice, timeZone, now.getTime());
  // A check reads up to lagSeconds before it started (lastCheckAt), while a surprise's window may reach a notified
  // change of a moment ago: the surprise is put on the same footing, so a stream checked since it is not woken again.
  const lagMs = ('lagSeconds' in source ? source.lagSeconds : 0) * 1000;
  // A practice whose day is read from its checks (atWorkSince) is found at work by one stream's check: the others,
  // last checked before its first change, are woken by it as by a surprise. A closed night of a practice whose hours
  // do not show yet is no forecast of its morning, and each of them is checked once to see.
  const opened = atWork !== null ? atWork + lagMs : undefined;
  // A practice planned by its stated hours, without webhooks, is looked at once after it opens (hours.ts,
  // OPENING_LOOK_MINUTES): each polled stream not checked since is checked, as if woken (a check reads to lagSeconds
  // before it starts). A stream is woken when it was last checked before the look or before a surprise, so the look
  // is the later of the two instants.
  // Not a stream its model gives less than MINOR_SHARE of the busiest one's changes (products beside appointments):
  // its few changes are left to its exploration.
  const look = spreadOver && !webhooksRegistered ? openingLookOn(spreadOver, now.getTime(), timeZone) : null;
  const looked = look !== null && now.getTime() >= look ? look - lagMs : undefined;
  const busiest = looked === undefined ? 0 : Math.max(0, ...practice.map((p) => p.usualPerWeek));
  const looksAt = new Set(
    looked === undefined ? [] : practice.filter((p) => p.usualPerWeek >= MINOR_SHARE * busiest).map((p) => p.resource),
  );
  const surpriseElsewhere = (resource: string): Date | undefined => {
    let at: number | undefined;
    for (const [r, t] of surprises) if (r !== resource && (at === undefined || t - lagMs < at)) at = t - lagMs;
    if (opened !== undefined && (at === undefined || opened < at)) at = opened;
    if (looked !== undefined && looksAt.has(resource) && (at === undefined || looked > at)) at = looked;
    return at === undefined ? undefined : new Date(at);
  };
  const inputs = new Map<string, StreamInput>();
  for (const s of streams) {
    const f = forecasts.get(s.resource);
    if (!f) continue;
    const { model, forecast, activity, evidence } = f;
    const row = rows.get(s.resource);
    const state = states.get(s.resource);
    const webhookFed = fed(s.resource);
    // A stream fed by webhooks is told of its changes: the practice's excess is for the polled ones.
    const excess = webhookFed ? 0 : (shared.get(s.resource) ?? 0);
    inputs.set(s.resource, {
      resource: s.resource,
      kind: s.kind,
      backfill: isBackfill(state),
      backfillPagesLeft: state?.pagesLeft ?? null,
      inFlight: inFlight.has(s.key),
      pausedUntil: row?.pausedUntil ?? null,
      lastCheckAt: row?.lastCheckAt ?? state?.cursor ?? null,
      cost: readings.costs.get(s.resource) ?? 1,
      rates: withExcess(withEvidence(forecast, timeZone, evidence), timeZone, excessFrom.getTime(), excess),
      forecastRates: evidence || excess > 0 ? forecast : undefined,
      modelRates: model,
      evidence,
      practiceExcessPerHour: excess > 0 ? excess : undefined,
      surpriseElsewhereAt: webhookFed ? undefined : surpriseElsewhere(s.resource),
      activity,
      webhookFed,
      notified: notifiedAt(readings.notified.get(s.resource), now),
      maxStalenessMinutes: s.maxStalenessMinutes,
    });
  }
  const exhausted = quota.exhaustedUntil !== null;
  const input: SourceInput = {
    now,
    timeZone,
    resetsAt: quota.resetsAt,
    budget: quota.budget,
    budgetUsed: exhausted ? quota.budget : quota.budgetUsed,
    webhooksRegistered,
    foundAtWork: atWork !== null && now.getTime() > atWork,
    lagMs,
    activeSlots,
    backfillLeft: exhausted ? 0 : Math.max(0, quota.allowance - quota.used - Math.max(0, quota.budget - quota.budgetUsed)),
    streams: [...inputs.values()],
    pinned,
    settings,
  };
  return {
    source: source.name,
    at: now,
    quota,
    input,
    streams,
    inputs,
    rows,
    cronFires,
    nextFires,
    health,
    pausedUntil,
    unreadToday,
    workday,
    atWorkSince: atWork !== null ? new Date(atWork) : null,
    atWorkUntil: checkedDay !== null ? new Date(longestDayEnd(checkedDay)) : null,
    hoursStated: useStated,
  };
}

/** A stream fed by webhooks at `now`: a notification of the last WEBHOOK_LOOKBACK_MS came for it. */
function fedAt(readings: SourceReadings, resource: string, now: Date): boolean {
  const latest = readings.notified.get(resource)?.latestReceived?.getTime();
  return latest !== undefined && latest > now.getTime() - WEBHOOK_LOOKBACK_MS;
}

/** A budget stream's forecast at `now`: its model scaled by today's activity so far. */
function forecastOf(
  resource: string,
  readings: SourceReadings,
  models: Map<string, ModelReading>,
  timeZone: string,
  quota: QuotaSnapshot,
  now: Date,
  activeFrom: number | undefined,
  spreadOver: StatedHours | null,
  webhooksRegistered: boolean,
): { model: Float64Array; forecast: Float64Array; activity: number; readToday: boolean } {
  const n = readings.notified.get(resource);
  const learned = models.get(resource)?.rates ?? NO_MODEL_RATES;
  const model = spreadOver ? spreadOverHours(learned, spreadOver) : learned;
  // A polled stream no check has read today has seen nothing of the day yet: counted as a quiet day, its unread hours
  // would lower its forecast hour by hour and keep it unread. Its activity waits for its first check of the day.
  const cursor = readings.states.get(resource)?.cursor?.getTime() ?? Number.NEGATIVE_INFINITY;
  const fed = fedAt(readings, resource, now);
  const readToday = fed || cursor > quota.startsAt.getTime();
  // A practice whose hours are not known yet is measured from its first change of the day (workdayOf): against a
  // model spread round the clock, the night it was closed would count as a quiet day and price its morning low.
  const dayFrom = activeFrom !== undefined ? activeFrom : quota.startsAt.getTime();
  // What has been seen of the day: up to now where webhooks are registered (a minute no notification came is a
  // minute without changes, as far as they show), up to what its checks read where they are not. Taken up to now
  // there too, the minutes since a polled stream's last check counted as minutes without changes, and its activity
  // fell by the minute until it was checked again: the busiest stream, checked at 8:02 by a window of the closed
  // night, was forecast at a tenth of its morning an hour later and not checked until 9:10 (bench/RESULTS.md,
  // "After: checks counted as they come, and a day's activity read up to what was read").
  // Where webhooks are registered, "now" is the instant the source was last read (readings.at: every notification and
  // every run's end reads it again, and nothing waits longer than REREAD_MS), as the practice's excess is: read up to
  // each instant, the activity fell tick by tick between reads, a stream's busy hour could end between two ticks of a
  // wake's segment, and the wake, which takes what is due at a segment's last tick to have been due from its first
  // on, woke up to half an hour after a tick that planning every tick dispatched at (bench/RESULTS.md, "Today's
  // activity read up to the source's last reading where webhooks are registered").
  const readUntil = fed || webhooksRegistered ? Math.min(now.getTime(), readings.at.getTime()) : Math.min(now.getTime(), cursor);
  const seenUntil = readToday && readUntil > dayFrom ? readUntil : dayFrom;
  const seen = Math.max(n?.today ?? 0, readings.found.get(resource) ?? 0);
  // Hours the practice moved into are new: a day whose remembered hours stayed empty says nothing against them.
  const moved = models.get(resource)?.movedIn;
  // Kept with the model: between two checks of a polled stream, every probe of its source asks for the same forecast
  // (the same day read up to the same instant), and the evidence and corrections read from it are kept with it.
  const { forecast, activity } = keptWith(
    forecastCache,
    model,
    (k) => k.timeZone === timeZone && k.from === dayFrom && k.until === seenUntil && k.seen === seen && k.moved === moved,
    () => ({ timeZone, from: dayFrom, until: seenUntil, seen, moved, ...scaledForecast(model, timeZone, dayFrom, seenUntil, seen, moved) }),
  );
  return { model, forecast, activity, readToday };
}
const forecastCache = new WeakMap<
  Float64Array,
  Array<{
    timeZone: string;
    from: number;
    until: number;
    seen: number;
    moved: Uint8Array | undefined;
    forecast: Float64Array;
    activity: number;
  }>
>();

/** A model scaled by today's activity (seen changes against those it expected from `from` to `until`). */
function scaledForecast(
  model: Float64Array,
  timeZone: string,
  from: number,
  until: number,
  seen: number,
  moved: Uint8Array | undefined,
): { forecast: Float64Array; activity: number } {
  const activity = activityToday(model, timeZone, new Date(from), new Date(until), seen);
  let forecast = model;
  if (activity !== 1) {
    // A loop, not Float64Array.prototype.map: with a callback that costs several times as much, at every plan.
    forecast = new Float64Array(model.length);
    if (moved && activity < 1) {
      // Hours the practice moved into answer only for themselves: the hours it left, quiet today, say nothing against
      // them, while moved-into hours that came today and stayed empty do. Unscaled until then, a closed day's moved-in
      // hours were checked as busy ones all day (a new practice's first Sunday: 133 requests, bench/RESULTS.md).
      const inMoved = movedFactor(model, moved, timeZone, from, until, seen);
      for (let i = 0; i < model.length; i++) forecast[i] = model[i]! * (moved[i] ? inMoved : activity);
    } else for (let i = 0; i < model.length; i++) forecast[i] = model[i]! * activity;
  }
  return { forecast, activity };
}

/**
 * The activity factor of a stream's moved-in hours (withRecentHours): the changes seen today against those its model
 * expected in the moved-in hours already come (from `from` to `until`), never above 1 (the rest of the day's factor
 * raises a busy day).
 */
function movedFactor(model: Float64Array, moved: Uint8Array, timeZone: string, from: number, until: number, seen: number): number {
  let expected = 0;
  if (until > from)
    forEachSlotPiece(from, until, timeZone, (slot, a, b) => (expected += moved[slot] ? (model[slot]! * (b - a)) / 3_600_000 : 0));
  return Math.min(1, Math.max(ACTIVITY_RANGE[0], (seen + ACTIVITY_PRIOR) / (expected + ACTIVITY_PRIOR)));
}

/** A webhook-fed stream's windows, read whole (without their first change), kept with the list read. */
function readWhole(list: WindowFound[]): WindowFound[] {
  return derivedFrom(wholeCache, list, (l) => l.map(({ firstChangeAt: _, ...w }) => w));
}
const wholeCache = new WeakMap<WindowFound[], WindowFound[]>();

/**
 * How long a practice's working day lasts, in hours from its first change, when its model does not know its hours
 * yet: its closing is taken as equally likely anywhere in this range. A clinic or an aesthetic practice works a day
 * of eight to twelve hours; one that works longer shows it by its notifications (closingRange).
 */
export const WORKDAY_HOURS = [8, 12] as const;

/** A practice's working day today as its notifications show it: from its first, and still at work at its latest. */
export interface Workday {
  from: number;
  last: number;
}

/**
 * Today's working day of a practice whose model does not know its hours (a new one: its first pass spread its
 * history round the clock), from the notifications of its streams since its local midnight (`dayStart`): from the
 * earliest start of a stream's latest run of them (NotifiedReading.runStart), to the latest of them; null before a
 * run with notifications in WORKDAY_MIN_RUN minutes. Its notifications are how it shows its hours as they come.
 */
export function workdayOf(notified: Iterable<NotifiedReading>, dayStart: number): Workday | null {
  let from = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const n of notified) {
    const start = n.runStart?.getTime();
    // A lone change in the night (an online booking, its record created and updated) is not the practice at work.
    if (start === undefined || start < dayStart || n.runCount < WORKDAY_MIN_RUN) continue;
    from = Math.min(from, start);
    last = Math.max(last, start, n.latestReceived?.getTime() ?? start);
  }
  return Number.isFinite(from) ? { from, last } : null;
}

/**
 * Minutes with notifications a stream's run of them needs to say the practice is at work (workdayOf), and changes a
 * check needs to find (atWorkSince).
 */
const WORKDAY_MIN_RUN = 2;

/**
 * When a practice whose model does not know its hours, and that sends no notifications, was first found at work
 * today by its checks (`atWork`, each stream's: atWorkSinceOf): the earliest first change since its local midnight
 * (`dayStart`) of a window with WORKDAY_MIN_RUN changes or more, and not after `now`. Null before one: a lone change
 * in the night (an online booking) is not the practice at work.
 */
export function atWorkSince(atWork: Iterable<AtWork>, dayStart: number, now: number): number | null {
  let from = Number.POSITIVE_INFINITY;
  for (const a of atWork) {
    // What was read for an earlier day (a stream not read again since the practice's midnight) says nothing of today.
    const t = a.since?.getTime();
    if (t !== undefined && a.day.getTime() === dayStart && t >= dayStart && t <= now && t < from) from = t;
  }
  return Number.isFinite(from) ? from : null;
}

/** The chance that a practice is still at work at `t`: its closing equally likely anywhere in closingRange. */
export function stillAtWork(w: Workday, t: number): number {
  const { from: lo, to: hi } = closingRange(w);
  if (t <= lo) return 1;
  return t >= hi ? 0 : (hi - t) / (hi - lo);
}

/**
 * When the practice is expected to close today, every instant of [from, to) equally likely: WORKDAY_HOURS after its
 * first change, and after its latest. Past the longest day (a practice open round the clock, or taking bookings at
 * night) it may go on as long again as it has worked: priced as closing within the hour, it would spend the budget
 * faster than its changes come.
 */
export function closingRange(w: Workday): { from: number; to: number } {
  const longest = w.from + WORKDAY_HOURS[1] * 3_600_000;
  if (w.last >= longest) return { from: w.last, to: w.last + (w.last - w.from) };
  return { from: Math.max(w.from + WORKDAY_HOURS[0] * 3_600_000, w.last), to: longest };
}

/** Pseudo-hours at the model's rate behind a rate read from today's notifications: the first minutes say little. */
const NOTIFIED_RATE_PRIOR_HOURS = 0.25;

/**
 * How often a stream's notifications come, an hour: the minutes of its run of them today with some (`runCount`,
 * since `runStart`: a batch in one minute, an import or a bulk edit, is one arrival, and one check reads it), or
 * none since the practice's working day began.
 */
export function notifiedRate(n: NotifiedReading | undefined, w: Workday, now: number, modelPerHour: number): number {
  const start = n?.runStart?.getTime();
  const own = start !== undefined && start >= w.from && (n?.runCount ?? 0) >= WORKDAY_MIN_RUN;
  const hours = Math.max(0, now - (own ? start : w.from)) / 3_600_000;
  return ((own ? n!.runCount : 0) + NOTIFIED_RATE_PRIOR_HOURS * modelPerHour) / (hours + NOTIFIED_RATE_PRIOR_HOURS);
}

/**
 * A forecast whose hours after the current one, up to the practice's next midnight, are weighed by the chance the
 * practice is still at work then (stillAtWork): a new practice's model, flat round the clock, would hold the
 * afternoon's budget back for an evening and a night as busy as its morning. The current hour keeps its rate: it is
 * being read, and a rush in it is judged against it. Hours of its next day (a quota day that turns later than the
 * practice's midnight) keep theirs: that day's work has not begun.
 */
function withWorkday(forecast: Float64Array, timeZone: string, now: number, to: number, w: Workday): Float64Array {
  const out = Float64Array.from(forecast);
  const from = nextSlotEdge(now, timeZone);
  if (from < to) forEachSlotPiece(from, to, timeZone, (slot, a, b) => (out[slot] = forecast[slot]! * stillAtWork(w, (a + b) / 2)));
  return out;
}

/**
 * The latest instant a practice found at work by its checks (since `atWork`) was still seen at work: the end of the
 * latest window of any of its streams that found a change, read by `now`. A window says its changes came before its
 * end, not when: its end is the latest they can have come, and a later one extends the practice's day.
 */
export function latestAtWork(windows: Iterable<readonly WindowFound[]>, atWork: number, now: number): number {
  let last = atWork;
  for (const list of windows) for (const w of list) if (w.changes > 0 && w.to > last && w.to <= now) last = w.to;
  return last;
}

/**
 * The end of the longest working day a practice may have today: WORKDAY_HOURS[1] after it was found at work, or, for
 * one seen at work past that, as long again as it has worked (closingRange's end).
 */
export function longestDayEnd(w: Workday): number {
  return closingRange(w).to;
}

/**
 * A forecast whose hours after the current one, up to `to` (the practice's next midnight or the quota day's end), hold
 * only until the end of the longest working day the practice may have (longestDayEnd), in proportion to the part of
 * each hour before it. The current hour keeps its rate: a check in it finds whether the practice is still at work,
 * and a change found late extends the day. So the evening is looked at again as the evidence of its empty hours
 * fades (a check every few hours): what those looks find empty is what the next days learn its closed evening from
 * (weighed from then on as the other hours, on one draw a new practice's first Sunday took 48 requests instead of 44,
 * and its first Saturday left a change unread: bench/RESULTS.md). Hours of the next day keep theirs.
 */
function withLongestDay(forecast: Float64Array, timeZone: string, now: number, to: number, w: Workday): Float64Array {
  const end = longestDayEnd(w);
  const from = nextSlotEdge(now, timeZone);
  if (!(from < to) || end >= to) return forecast;
  const out = Float64Array.from(forecast);
  forEachSlotPiece(from, to, timeZone, (slot, a, b) => (out[slot] = forecast[slot]! * Math.min(1, Math.max(0, (end - a) / (b - a)))));
  return out;
}

/** The practice's excess as read (sharedExcess), kept with the readings and models it was read from. */
const sharedCache = new WeakMap<
  SourceReadings,
  { models: Map<string, ModelReading>; streams: ScheduledStream[]; shared: Map<string, number> }
>();

/**
 * Each polled stream's share of the practice's excess (rates.ts, practiceExcess), as of the source's latest check
 * (`at`: excessAt), and applied from there on (withExcess). Read at each instant instead, the excess would move with the
 * clock alone, up and down as windows slide out of the last hour, and a stream due at one tick could be not due at
 * the next with nothing else changed: the wake, which finds the first tick that dispatches by assuming that what is
 * due stays due (src/scheduler/wake.ts), would miss such ticks.
 *
 * Not as of the instant the source was read (`readings.at`), as it was: a replica reads a source again after every
 * check and at least hourly, and `pmsync status`, in a process of its own, reads it when asked. Read at 19:00, an
 * hour of appointments' checks above their forecast lent orders 1.4 changes an hour and made it due at once in
 * status, while the replica, which had read the source at 18:44, left it to its exploration check at 21:43 (a new
 * practice's fifth day, `node bench/new-practice-days.ts --days 5 --status-at 5@19:00`). The latest check is in the
 * state both read, so both see the same excess, and it is the hour the checks spoke for.
 */
function sharedExcess(
  source: SourceConfig,
  streams: ScheduledStream[],
  readings: SourceReadings,
  models: Map<string, ModelReading>,
  at: Date,
): Map<string, number> {
  const kept = sharedCache.get(readings);
  if (kept && kept.models === models && kept.streams === streams) return kept.shared;
  const timeZone = sourceTimeZone(source);
  const stated = statedHours(source);
  const spreadOver = activeSlotsOf(streams, models, stated).useStated ? stated : null;
  const registered = readings.webhooksUntil !== null && readings.webhooksUntil > at.getTime();
  const practice: StreamWindows[] = [];
  for (const s of streams) {
    if (s.schedule.mode !== 'budget' || s.kind !== 'incremental') continue;
    const f = forecastOf(s.resource, readings, models, timeZone, readings.quota, at, undefined, spreadOver, registered);
    const list = readings.windows.get(s.resource) ?? NO_WINDOWS;
    const windows = fedAt(readings, s.resource, at) ? readWhole(list) : list;
    practice.push({ resource: s.resource, forecast: f.forecast, windows, usualPerWeek: usualPerWeek(f.model) });
  }
  const shared = practiceExcess(practice, timeZone, at.getTime());
  sharedCache.set(readings, { models, streams, shared });
  return shared;
}

/**
 * The instant the practice's excess is read as of (sharedExcess): the end of the latest window read of any of the
 * source's streams, no later than the source was read; the instant it was read when none was.
 */
export function excessAt(readings: SourceReadings): Date {
  const read = readings.at.getTime();
  let latest = Number.NEGATIVE_INFINITY;
  for (const list of readings.windows.values()) for (const w of list) if (w.to <= read && w.to > latest) latest = w.to;
  return Number.isFinite(latest) ? new Date(latest) : readings.at;
}

/** A model's changes in a usual week, kept with its rates (a model's rates are never written into, only read again). */
const usualCache = new WeakMap<Float64Array, number>();
function usualPerWeek(rates: Float64Array): number {
  let sum = usualCache.get(rates);
  if (sum === undefined) {
    // A loop, not reduce with a callback: the same sum in the same order, asked of each model read again.
    sum = 0;
    for (let i = 0; i < rates.length; i++) sum += rates[i]!;
    usualCache.set(rates, sum);
  }
  return sum;
}

/** The practice's active hours from its streams' models, kept with the models (they change only when the models do). */
const activeSlotsCache = new WeakMap<
  Map<string, ModelReading>,
  { streams: ScheduledStream[]; stated: StatedHours | null; slots: Uint8Array; useStated: boolean }
>();
/**
 * The practice's active hours, and whether they are its stated hours (hours.ts): until its changes show its own,
 * every hour of the week is alike, and the practice's hours are read as they come, unless its operator stated them.
 */
function activeSlotsOf(
  streams: ScheduledStream[],
  models: Map<string, ModelReading>,
  stated: StatedHours | null,
): { slots: Uint8Array; useStated: boolean } {
  const cached = activeSlotsCache.get(models);
  if (cached && cached.streams === streams && cached.stated === stated) return cached;
  const read = streams.map((s) => models.get(s.resource)).filter((m): m is ModelReading => m !== undefined);
  const byHour = read.map((m) => m.byHour).filter((h): h is HourOfDay => h !== undefined);
  const unknown = byHour.length === read.length && !hoursShown(byHour);
  const useStated = unknown && stated !== null;
  const slots = useStated ? stated.slots : unknown ? new Uint8Array(SLOTS).fill(1) : activeSlots(read.map((m) => m.rates));
  activeSlotsCache.set(models, { streams, stated, slots, useStated });
  return { slots, useStated };
}

/** activeSlots' working sums, zeroed at each use (a typed array this size is allocated outside the heap). */
const activeTotal = new Float64Array(SLOTS);

/** A source is active in an hour of the week when its streams are expected to change this often then (changes an hour)... */
const ACTIVE_MIN_PER_HOUR = 0.2;
/** ...and at least this share of its busiest hour. */
const ACTIVE_SHARE_OF_PEAK = 0.1;

/**
 * The hours of the week in which the practice has been active, from its
 * streams' learned models (not today's activity: a quiet day is explored as
 * usual). Its opening hours, as its changes show them: a closed weekday drops
 * out as its slots learn that nothing happens, new hours come in as they fill.
 */
export function activeSlots(models: Float64Array[]): Uint8Array {
  const total = activeTotal.fill(0);
  for (const m of models) for (let i = 0; i < SLOTS; i++) total[i] = total[i]! + m[i]!;
  // Loops, not a spread and a callback: this runs each time one of a source's models is read again.
  let peak = 0;
  let unknown = false;
  for (let i = 0; i < SLOTS; i++) {
    if (total[i]! > peak) peak = total[i]!;
    else if (Number.isNaN(total[i]!)) unknown = true;
  }
  if (unknown) peak = Number.NaN; // as Math.max has it
  const out = new Uint8Array(SLOTS);
  for (let i = 0; i < SLOTS; i++) out[i] = total[i]! >= ACTIVE_MIN_PER_HOUR && total[i]! >= ACTIVE_SHARE_OF_PEAK * peak ? 1 : 0;
  return out;
}

/** How far today's activity may scale the rest of the day's forecast, down and up. */
const ACTIVITY_RANGE = [0.05, 3] as const;
/** Pseudo-changes behind the activity factor: a few quiet minutes do not make a quiet day. */
const ACTIVITY_PRIOR = 3;

/**
 * Today's activity factor of a stream: the changes seen since the quota day
 * began (notified, or found by its checks) against those its model expected
 * by `until` (now, or as far as its checks have read), as a Poisson rate ratio
 * with a prior of ACTIVITY_PRIOR changes each way. A busy day makes the rest of it planned busier; a day the model expects
 * to be busy but that stays quiet (a holiday, a closure) soon stops paying for
 * checks that find nothing.
 */
export function activityToday(rates: Float64Array, timeZone: string, dayStart: Date, until: Date, seen: number): number {
  const expected = until > dayStart ? expectedSince(rates, timeZone, dayStart.getTime(), until.getTime()).changes : 0;
  const factor = (seen + ACTIVITY_PRIOR) / (expected + ACTIVITY_PRIOR);
  return Math.min(ACTIVITY_RANGE[1], Math.max(ACTIVITY_RANGE[0], factor));
}

interface StreamStateLite {
  cursor: Date | null;
  /** A window is open (a damaged checkpoint counts as open: its run reports it). */
  open: boolean;
  pagesLeft: number | null;
}

/** A stream with no completed window yet, or one left open, is read as a backfill. */
function isBackfill(state: StreamStateLite | undefined): boolean {
  return !state || state.cursor === null || state.open;
}
