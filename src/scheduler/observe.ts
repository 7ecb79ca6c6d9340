/**
 * What the scheduler decides from: the inputs of one source at one instant,
 * read from state (its streams' schedules, checkpoints, notifications, the
 * windows its recent checks read, its change models and costs, its health
 * and quota), turned into the pure plan's input (src/scheduler/budget.ts)
 * and planned. No side effects: `pmsync status` and the metrics observe a
 * source as the scheduler does.
 */

import type { SourceConfig } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import { pagesLeft } from '../api/pager.ts';
import { loadChangeModels, loadChangeModelsOf, type StoredSlot } from '../state/change-model.ts';
import { readCheckpoints } from '../state/checkpoints.ts';
import type { QuotaLedger, QuotaSnapshot } from '../state/quota.ts';
import { changesFoundSince, recentCheckCosts, recentCheckCostsOf, recentWindows } from '../state/runs.ts';
import { readSourceHealth, type SourceHealth } from '../state/source-health.ts';
import { sourcesWithWebhooks } from '../state/webhook-secrets.ts';
import { loadStreamSchedules, notifiedByStream, type StreamScheduleRow } from '../state/stream-schedule.ts';
import type { Purpose } from '../api/http.ts';
import { nextFire, previousFire } from '../cron.ts';
import { NO_NOTIFICATIONS, planSource, type PinnedInput, type SourceInput, type SourcePlan, type StreamInput } from './budget.ts';
import { slotOf } from '../time.ts';
import { sourceTimeZone, type ScheduledStream } from './plan.ts';
import {
  EVIDENCE_LOOKBACK_HOURS,
  evidenceOf,
  expectedSince,
  practiceExcess,
  surprisesFound,
  slotRates,
  slotRatesWithMoved,
  withEvidence,
  withExcess,
  type Evidence,
  type WindowFound,
} from './rates.ts';
import { pinnedInput } from './pinned.ts';
import { CHECK_COST_RUNS as COST_RUNS } from '../state/runs.ts';
import { SLOTS } from '../state/change-model.ts';
import type { ScheduleSettings } from '../config/schedules.ts';

/** A stream fed by webhooks is one that received a notification within this long. */
const WEBHOOK_LOOKBACK_MS = 24 * 3_600_000;
/** Recent windows of a stream that today's evidence is read from. */
const EVIDENCE_RUNS = 8;

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
}

export interface ObserveDeps {
  pool: Pool;
  ledgerFor(source: SourceConfig): QuotaLedger;
  settings: ScheduleSettings;
  /** Change models and costs, possibly cached. */
  slow?: (source: string, now: Date, timeZone: string) => Promise<SlowRead>;
  /** Every source's health, read once for all of them; read for the one source when absent. */
  health?: Map<string, SourceHealth>;
}

export interface SlowRead {
  at: number;
  /**
   * Each stream's change rates (changes per hour in each slot of the week) as
   * of `at`. Kept instead of the stored slots they come from: a fleet's
   * scheduler caches this for every source, and 168 numbers a stream are a
   * few kB where the slots as rows took about 25 kB.
   */
  rates: Map<string, Float64Array>;
  /** The practice's weekday the rates were read for (0 = Sunday): today's own hours are not in its recent profile. */
  today: number;
  /** Slots each stream's recent days raised above its long memory: hours the practice moved into. */
  movedIn?: Map<string, Uint8Array>;
  costs: Map<string, number>;
  /** Webhooks are registered for the source: its notifications will show its hours. */
  webhooks: boolean;
}

/** The practice's weekday now (0 = Sunday): its recent profile is read without today's own hours. */
export function localWeekday(now: Date, timeZone: string): number {
  return Math.floor(slotOf(now.getTime(), timeZone) / 24);
}

function ratesOf(
  models: Map<string, StoredSlot[]>,
  now: Date,
  timeZone: string,
): { today: number; rates: Map<string, Float64Array>; movedIn: Map<string, Uint8Array> } {
  const rates = new Map<string, Float64Array>();
  const movedIn = new Map<string, Uint8Array>();
  const today = localWeekday(now, timeZone);
  for (const [resource, slots] of models) {
    const r = slotRatesWithMoved(slots, now, today);
    rates.set(resource, r.rates);
    movedIn.set(resource, r.movedIn);
  }
  return { today, rates, movedIn };
}

export async function readSlow(pool: Pool, source: string, now: Date, timeZone: string): Promise<SlowRead> {
  const [models, costs, hooked] = await Promise.all([
    loadChangeModels(pool, source),
    loadCosts(pool, source),
    sourcesWithWebhooks(pool, [source], now),
  ]);
  return { at: now.getTime(), ...ratesOf(models, now, timeZone), costs, webhooks: hooked.has(source) };
}

/** readSlow for many sources' streams with three queries (status over a fleet): source -> its read. */
export async function readSlowOf(
  pool: Pool,
  streams: ScheduledStream[],
  now: Date,
  timeZoneOf: (source: string) => string,
): Promise<Map<string, SlowRead>> {
  const sources = [...new Set(streams.map((s) => s.source))];
  const [models, costs, hooked] = await Promise.all([
    loadChangeModelsOf(pool, sources),
    recentCheckCostsOf(pool, streams, COST_RUNS),
    sourcesWithWebhooks(pool, sources, now),
  ]);
  const out = new Map<string, SlowRead>(
    sources.map((s) => [
      s,
      { at: now.getTime(), ...ratesOf(models.get(s) ?? new Map(), now, timeZoneOf(s)), costs: new Map(), webhooks: hooked.has(s) },
    ]),
  );
  for (const s of streams) {
    const cost = costs.get(s.key);
    if (cost !== undefined) out.get(s.source)!.costs.set(s.resource, Math.max(1, cost));
  }
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
  const { pool, settings } = deps;
  const quota = await deps.ledgerFor(source).snapshot();
  const [rows, states, notified, found, windows, slow, health] = await Promise.all([
    loadStreamSchedules(pool, source.name),
    loadStates(pool, source.name),
    notifiedByStream(pool, source.name, now, new Date(now.getTime() - WEBHOOK_LOOKBACK_MS), quota.startsAt),
    changesFoundSince(pool, source.name, quota.startsAt),
    recentWindows(pool, source.name, new Date(now.getTime() - EVIDENCE_LOOKBACK_HOURS * 3_600_000), EVIDENCE_RUNS),
    deps.slow ? deps.slow(source.name, now, sourceTimeZone(source)) : readSlow(pool, source.name, now, sourceTimeZone(source)),
    deps.health ? (deps.health.get(source.name) ?? null) : readSourceHealth(pool, source.name),
  ]);
  const pausedUntil = health?.pausedUntil && health.pausedUntil > now ? health.pausedUntil : null;
  const timeZone = sourceTimeZone(source);

  // Pinned streams: their cron fires, whatever the plan; and what they will spend today.
  const pinned: PinnedInput[] = [];
  const cronFires: CronFire[] = [];
  const nextFires = new Map<string, Date | null>();
  for (const s of streams) {
    if (s.schedule.mode !== 'cron') continue;
    pinned.push(pinnedInput(s, slow.costs.get(s.resource) ?? 1, now, quota.resetsAt)!);
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
    const list = windows.get(resource) ?? [];
    return (notified.get(resource)?.recent ?? 0) > 0 ? list.map(({ firstChangeAt: _, ...w }) => w) : list;
  };
  // Each budget stream's forecast (its model scaled by today's activity) and its own evidence first:
  // the practice-wide excess is read from all of them.
  const forecasts = new Map<string, { model: Float64Array; forecast: Float64Array; activity: number; evidence: Evidence | null }>();
  for (const s of streams) {
    if (s.schedule.mode !== 'budget') continue;
    const n = notified.get(s.resource);
    const model = slow.rates.get(s.resource) ?? slotRates([], now);
    const activity = activityToday(model, timeZone, quota.startsAt, now, Math.max(n?.today ?? 0, found.get(s.resource) ?? 0));
    // Hours the practice moved into are new: a day whose remembered hours stayed empty says nothing against them.
    const moved = slow.movedIn?.get(s.resource);
    const forecast = activity === 1 ? model : model.map((r, i) => r * (moved?.[i] && activity < 1 ? 1 : activity));
    const evidence = evidenceOf(forecast, timeZone, windowsOf(s.resource), now.getTime());
    forecasts.set(s.resource, { model, forecast, activity, evidence });
  }
  const practice = streams
    .filter((s) => s.kind === 'incremental' && forecasts.has(s.resource))
    .map((s) => {
      const f = forecasts.get(s.resource)!;
      return {
        resource: s.resource,
        forecast: f.forecast,
        windows: windowsOf(s.resource),
        usualPerWeek: f.model.reduce((a, b) => a + b, 0),
      };
    });
  const shared = practiceExcess(practice, timeZone, now.getTime());
  const surprises = surprisesFound(practice, timeZone, now.getTime());
  // A check reads up to lagSeconds before it started (lastCheckAt), while a surprise's window may reach a notified
  // change of a moment ago: the surprise is put on the same footing, so a stream checked since it is not woken again.
  const lagMs = ('lagSeconds' in source ? source.lagSeconds : 0) * 1000;
  const surpriseElsewhere = (resource: string): Date | undefined => {
    let at: number | undefined;
    for (const [r, t] of surprises) if (r !== resource && (at === undefined || t < at)) at = t;
    return at === undefined ? undefined : new Date(at - lagMs);
  };
  const inputs = new Map<string, StreamInput>();
  for (const s of streams) {
    const f = forecasts.get(s.resource);
    if (!f) continue;
    const { model, forecast, activity, evidence } = f;
    const row = rows.get(s.resource);
    const state = states.get(s.resource);
    const n = notified.get(s.resource);
    const webhookFed = (n?.recent ?? 0) > 0;
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
      cost: slow.costs.get(s.resource) ?? 1,
      rates: withExcess(withEvidence(forecast, timeZone, evidence), timeZone, now.getTime(), excess),
      forecastRates: evidence || excess > 0 ? forecast : undefined,
      modelRates: model,
      evidence,
      practiceExcessPerHour: excess > 0 ? excess : undefined,
      surpriseElsewhereAt: webhookFed ? undefined : surpriseElsewhere(s.resource),
      activity,
      webhookFed,
      notified:
        n && n.pending > 0
          ? { count: n.pending, oldest: n.oldest, ageMinutes: n.ageMinutes, latestEvent: n.latestEvent }
          : NO_NOTIFICATIONS,
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
    webhooksRegistered: slow.webhooks,
    activeSlots: activeSlots(streams.map((s) => slow.rates.get(s.resource)).filter((r): r is Float64Array => r !== undefined)),
    backfillLeft: exhausted ? 0 : Math.max(0, quota.allowance - quota.used - Math.max(0, quota.budget - quota.budgetUsed)),
    streams: [...inputs.values()],
    pinned,
    settings,
  };
  const plan = planSource(input);
  return { source: source.name, at: now, quota, plan, input, streams, inputs, rows, cronFires, nextFires, health, pausedUntil };
}

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
  const total = new Float64Array(SLOTS);
  for (const m of models) for (let i = 0; i < SLOTS; i++) total[i] = total[i]! + m[i]!;
  const peak = Math.max(0, ...total);
  return Uint8Array.from(total, (r) => (r >= ACTIVE_MIN_PER_HOUR && r >= ACTIVE_SHARE_OF_PEAK * peak ? 1 : 0));
}

/** How far today's activity may scale the rest of the day's forecast, down and up. */
const ACTIVITY_RANGE = [0.05, 3] as const;
/** Pseudo-changes behind the activity factor: a few quiet minutes do not make a quiet day. */
const ACTIVITY_PRIOR = 3;

/**
 * Today's activity factor of a stream: the changes seen since the quota day
 * began (notified, or found by its checks) against those its model expected
 * by now, as a Poisson rate ratio with a prior of ACTIVITY_PRIOR changes each
 * way. A busy day makes the rest of it planned busier; a day the model expects
 * to be busy but that stays quiet (a holiday, a closure) soon stops paying for
 * checks that find nothing.
 */
export function activityToday(rates: Float64Array, timeZone: string, dayStart: Date, now: Date, seen: number): number {
  const expected = expectedSince(rates, timeZone, dayStart.getTime(), now.getTime()).changes;
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

async function loadStates(pool: Pool, source: string): Promise<Map<string, StreamStateLite>> {
  const rows = await readCheckpoints(pool, source);
  return new Map(
    rows.map((r) => {
      const paging = r.window?.paging;
      return [r.resource, { cursor: r.cursor, open: r.open, pagesLeft: paging ? pagesLeft(paging) : null }];
    }),
  );
}

/** Requests a check of each stream took lately: its completed checks and full passes. */
async function loadCosts(pool: Pool, source: string): Promise<Map<string, number>> {
  const costs = await recentCheckCosts(pool, source, COST_RUNS);
  return new Map([...costs].map(([resource, cost]) => [resource, Math.max(1, cost)]));
}
