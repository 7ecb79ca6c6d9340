/**
 * Spending a source's daily budget where it buys the most freshness. Pure:
 * the scheduler hands in what it read from the database and gets back what is
 * due now and what the rest of the quota day is planned to cost.
 *
 * The measure is staleness per change: the time from a change at the source
 * to its row being written. A check of a stream reads every change since its
 * last check, so it clears the staleness the stream has built up: the summed
 * age of its unread changes, A. A stream is checked when
 *
 *     A >= mu * cost   and   the changes expected since its last check >= cost,
 *
 * where cost is the requests a check of it takes and mu (change-minutes per
 * request) is the exchange rate set below. For a polled stream A is expected
 * from its change model (src/scheduler/rates.ts); for a stream fed by webhooks
 * it is known: the summed age of its notifications. The second condition is
 * the "every request buys new information" floor: no stream is checked more
 * than about once per change it is expected to have.
 *
 * Why this rule. For a stream changing at rate r and checked every x minutes,
 * changes wait x/2 on average, so a day costs r*T*x/2 change-minutes of
 * staleness and T/x checks. Minimising total staleness over all streams for a
 * fixed number of requests gives x = sqrt(2*mu*cost/r): checks in proportion
 * to the square root of the change rate, which is exactly when the rule above
 * fires. This is the crawler revisit result: proportional allocation (check
 * twice as often what changes twice as often) is worse than uniform, and the
 * optimum favours moderately changing streams over the busiest ones. Closed
 * hours, with a rate near zero, get almost no checks.
 *
 * The mean is not the whole day: the square-root rule leaves the slower busy
 * streams the longest waits, and they make its 95th percentile. So before the
 * exchange rate is set, polled streams get one common interval for their busy
 * hours, the tightest the budget carries (commonInterval, the tail rule), and
 * the exchange rate spends what is left.
 *
 * Webhooks. A notified stream is checked once its notifications' summed age
 * is worth a request at the same rate, but never before `debounceSeconds`
 * after the oldest (so a burst is read by one check: N notifications in one
 * window cost ceil(N/100) requests, not N) and no later than
 * `notifiedWithinMinutes` (or the stream's own maxStalenessMinutes) after it,
 * while the budget allows. The check's window reaches the latest notified
 * change whatever lagSeconds says. Such a stream otherwise gets a safety-net
 * check every `safetyNetMinutes`, for changes no notification announced.
 *
 * mu is the smallest rate whose planned spend for the rest of the quota day
 * fits the budget left, less a margin (its square root, the spread of a random
 * count of that size, and a tenth of it for a model that expects less than the
 * day brings): spend(mu) falls as mu rises, so it is found by bisection. Planned spend adds every stream's expected checks per hour (from
 * its model), the floor (every stream at least once per `floorHours`), the
 * safety nets and the pinned (cron) streams. Freshness bounds (the
 * notified-change bound and maxStalenessMinutes) are honoured while that plan
 * fits; when it does not, they stretch together by the least factor that fits,
 * and the stretch is reported once per change.
 */
import type { Purpose } from '../api/http.ts';
import { forEachSlotPiece, nextSlotEdge, slotOf } from '../time.ts';
import { expectedSince, type Evidence } from './rates.ts';
import { derivedFrom, keptWith } from './kept.ts';
import { SLOTS } from '../state/change-model.ts';

export interface Notified {
  /** Notifications not yet covered by a check. */
  count: number;
  /** When the oldest of them was received. */
  oldest: Date | null;
  /** Their summed age at `now`, in minutes. */
  ageMinutes: number;
  /** The latest EventTimestamp among them: the check's window reaches it. */
  latestEvent: Date | null;
}

export const NO_NOTIFICATIONS: Notified = { count: 0, oldest: null, ageMinutes: 0, latestEvent: null };

export interface StreamInput {
  resource: string;
  /** Incremental checks, or full-refresh passes. */
  kind: 'incremental' | 'full';
  /** No completed window yet, or one left open: read as a backfill, outside the budget. */
  backfill: boolean;
  /** Pages the open backfill window still needs, when known. */
  backfillPagesLeft: number | null;
  /** Dispatched and not finished. */
  inFlight: boolean;
  /** Held back until then (its last run found its share of the quota used up). */
  pausedUntil: Date | null;
  /** Start of its last successful check: every change before it was read. Null when never checked. */
  lastCheckAt: Date | null;
  /** Requests one check takes. */
  cost: number;
  /** Changes per hour in each hour-of-week slot (today's activity factor applied). */
  rates: Float64Array;
  /** Today's activity against the model's (1: as usual); for status. */
  activity?: number;
  /**
   * The rates before today's evidence (what its recent checks found) was
   * applied, when it was: a check due only because of the evidence says so.
   */
  forecastRates?: Float64Array;
  /** What its recent checks found against the forecast; for status. */
  evidence?: Evidence | null;
  /** Changes an hour the other streams' evidence adds to it now (rates.ts, practiceExcess); for status. */
  practiceExcessPerHour?: number;
  /**
   * When another stream of the practice first found far more changes than
   * forecast, lately (rates.ts, surprisesFound): a polled stream not checked
   * since is checked once, to see whether the practice is busier than
   * expected or the surprise was that stream's own.
   */
  surpriseElsewhereAt?: Date;
  /** Its learned model's rates, before today's activity and evidence: what a usual day would bring. */
  modelRates?: Float64Array;
  /** Webhook notifications arrive for this stream. */
  webhookFed: boolean;
  notified: Notified;
  /** Freshness target in minutes, or null. */
  maxStalenessMinutes: number | null;
}

/** A stream pinned to a cron expression: its fires left today are spent whatever the plan. */
export interface PinnedInput {
  resource: string;
  purpose: Purpose;
  cost: number;
  firesLeft: number;
}

export interface PlanSettings {
  debounceSeconds: number;
  notifiedWithinMinutes: number;
  safetyNetMinutes: number;
  floorHours: number;
  /** The scheduler looks this often: bounds are met this much early. */
  tickSeconds: number;
}

export interface SourceInput {
  now: Date;
  /** The practice's zone: the model's hours of the week. */
  timeZone: string;
  /** End of the quota day: the plan's horizon. */
  resetsAt: Date;
  budget: number;
  budgetUsed: number;
  /**
   * Hours of the week (168, in `timeZone`) in which the practice has been
   * active, from its learned model: quiet streams are explored in them. Every
   * hour until its changes show its hours (rates.ts, hoursShown). Null: not
   * known, no exploration.
   */
  activeSlots?: Uint8Array | null;
  /** Webhooks are registered for the source (notifications will come, whether or not any has yet). */
  webhooksRegistered?: boolean;
  /**
   * A practice whose hours do not show yet was found at work today by its checks (observe.ts, atWorkSince): its day
   * has begun, and each stream's rate is what its checks found since. Exploring no longer finds its day.
   */
  foundAtWork?: boolean;
  /**
   * A check reads changes up to this long before it starts (the source's
   * lagSeconds, in ms; 0 when absent): a change made in that last stretch is
   * left to the next check.
   */
  lagMs?: number;
  /** Requests backfills may still send today. */
  backfillLeft: number;
  streams: StreamInput[];
  pinned: PinnedInput[];
  settings: PlanSettings;
}

/**
 * Why a check is due. `rate`: its expected unread changes are worth a
 * request (the rate rule); `evidence`: the same, but only because what its
 * recent checks found, or what the practice's other streams found beyond
 * their forecasts (rates.ts, practiceExcess), raised today's rate above the
 * forecast, or because another stream's check found far more than forecast
 * since its last check (rates.ts, surprisesFound); `interval`: a polled stream in its busy hours that has gone the
 * day's common interval (the tail rule below); `exploration`:
 * a stream the model calls quiet, checked at the exploration bound in the
 * practice's active hours; `pacing`: budget that would be lost at the reset
 * spent on a stream expected to have changes waiting.
 */
export type DueReason =
  | 'backfill'
  | 'rate'
  | 'evidence'
  | 'max-staleness'
  | 'interval'
  | 'exploration'
  | 'pacing'
  | 'floor'
  | 'notified'
  | 'notified-max-wait'
  | 'safety-net';

export interface Due {
  purpose: Purpose;
  reason: DueReason;
  /** The window must reach this instant (the latest notified change). */
  mustInclude?: Date;
}

export interface StreamPlan {
  resource: string;
  due: Due | null;
  /** Why it is not due when it is not: for status. */
  waiting: string | null;
  /** Checks expected for the rest of the quota day. */
  expectedChecks: number;
  /** Whether its freshness bound holds as set (not stretched) in this plan; null when it has none. */
  targetHonoured: boolean | null;
}

export interface PlannedSpend {
  check: number;
  webhook: number;
  full: number;
  backfill: number;
}

export interface SourcePlan {
  /** Change-minutes of staleness a request must clear to be sent (Infinity: only floors and targets). */
  mu: number;
  /** Budget left for the rest of the quota day. */
  available: number;
  /** Factor the freshness bounds are stretched by today to fit the budget (1: honoured as set). */
  stretch: number;
  /**
   * Longest interval, in active hours of the practice, between checks of a
   * polled stream (stretched as the other bounds are); null when nothing is
   * explored.
   */
  exploreMinutes: number | null;
  /**
   * The common interval, in minutes, within which every polled stream is
   * checked in its busy hours (at least one change an hour expected): the
   * tightest the budget carries today. Null when the bounds had to stretch or
   * no polled stream has busy hours left.
   */
  intervalMinutes: number | null;
  /**
   * The interval's slack (slackSlots): by stream, the local hours (0-23) of today's slowest busy hours, in which it
   * is checked at SLACK_FACTOR times the interval. Empty when there is no interval.
   */
  slackHours: Record<string, number[]>;
  /** Requests held back from the plan for a day busier than it expects. */
  reserve: number;
  planned: PlannedSpend;
  streams: StreamPlan[];
  /** Freshness bounds this plan had to stretch, one line each. */
  warnings: Array<{ resource: string; message: string }>;
}

const MINUTE = 60_000;

/** Minutes after the first notification that the rule fires, given the rate of further ones. */
export function notifiedDelay(mu: number, perMinute: number, cost: number): number {
  if (!Number.isFinite(mu)) return Number.POSITIVE_INFINITY;
  if (perMinute <= 0) return mu * cost;
  // The first notification ages t while later ones arrive at perMinute: A(t) = t + perMinute * t^2 / 2 = mu * cost.
  return (Math.sqrt(1 + 2 * perMinute * mu * cost) - 1) / perMinute;
}

/** Minutes between checks of a polled stream changing `perMinute`; Infinity when never worth it. */
export function pollInterval(mu: number, perMinute: number, cost: number, target: number | null): number {
  let x = Number.POSITIVE_INFINITY;
  if (perMinute > 0)
    x = Math.max(Number.isFinite(mu) ? Math.sqrt((2 * mu * cost) / perMinute) : Number.POSITIVE_INFINITY, cost / perMinute);
  return target !== null ? Math.min(x, target) : x;
}

/** A target applies to a polled stream in the hours it is expected to change: at least one change an hour. */
/** An hour in which the stream is expected to change (its freshness target holds then; the floor outside). */
export function activeHour(perHour: number): boolean {
  return perHour >= 1;
}

/**
 * An hour in which the tail rule keeps a polled stream on the common interval:
 * a few changes expected. A stream with one change an hour or so carries few of
 * the day's changes, and is left to the exchange rate.
 */
export const BUSY_PER_HOUR = 2;
function busyHour(perHour: number): boolean {
  return perHour >= BUSY_PER_HOUR;
}

/** The bounds a plan applies to a stream (stretched when the budget cannot carry them). */
interface Bounds {
  /** Freshness target of a polled stream, minutes; null when none. */
  target: number | null;
  /** Longest wait of a notified change, minutes. */
  maxWait: number;
  /** Longest interval between its checks in the practice's active hours (minutes of them); null: not explored. */
  explore: number | null;
  /** The common interval of polled streams in their busy hours (minutes); null: none today. */
  interval: number | null;
}

/** A stream with the bounds this plan applies to it. */
interface Bounded extends StreamInput, Bounds {}

/**
 * Exploration. A stream the model calls quiet may not be: a burst on it
 * (a stock count, a price change) would wait for its daily floor. So every
 * polled incremental stream is checked at least every exploreMinutes of the
 * practice's active hours, whatever its rate: the explore side of
 * explore-then-commit crawling (Upadhyay et al., "Learning to crawl", AAAI
 * 2020), with the share it may take set by the budget. Streams fed by webhooks
 * have a signal and their safety net; full-refresh streams are catalogs read
 * whole, and keep their floor.
 */
export const EXPLORE_SHARE = 0.05;
/**
 * The share when the practice's changes show no hours yet (every hour of the
 * week looks alike: a new practice, a model still at its prior). Nothing
 * tells its quiet streams from its busy ones, or its open hours from closed
 * ones, so exploring is how it learns, and what a check finds is its evidence.
 * Not when webhooks are registered for it or feed some of its streams: their notifications show the
 * practice's hours as they come (and wake the polled streams, rates.ts,
 * surprisesFound), and the budget is theirs to read them by.
 */
export const EXPLORE_SHARE_NO_HOURS = 0.5;
/** The exploration bound never goes below this, however large the budget... */
export const EXPLORE_MIN_HOURS = 1;
/** ...nor above this, however small: a burst waits hours, not a day. */
export const EXPLORE_MAX_HOURS = 4;

function explorable(s: StreamInput): boolean {
  return !s.backfill && !s.webhookFed && s.kind === 'incremental';
}

/** Minutes of active hours between exploring checks of a polled stream, from the budget; null when none applies. */
export function exploreBound(input: SourceInput): number | null {
  const slots = input.activeSlots;
  if (!slots) return null;
  const active = activeCount(slots);
  const streams = input.streams.filter(explorable);
  if (active === 0 || streams.length === 0) return null;
  const costPerDay = (active / 7) * streams.reduce((n, s) => n + s.cost, 0);
  const noHours = active === slots.length && exploresForHours(input);
  const hours = costPerDay / ((noHours ? EXPLORE_SHARE_NO_HOURS : EXPLORE_SHARE) * input.budget);
  return Math.min(EXPLORE_MAX_HOURS, Math.max(EXPLORE_MIN_HOURS, Number.isFinite(hours) ? hours : EXPLORE_MAX_HOURS)) * 60;
}

/**
 * Exploration is how the practice's day is found: no webhooks show it (exploreBound, EXPLORE_SHARE_NO_HOURS), and
 * no check found it at work yet today. Once one has, its streams' rates are what their checks found since, which
 * tells the busy streams from the quiet ones, and the quiet ones are explored at the usual share: at half the budget
 * all day, four quiet streams of a new practice took 49 of its 150 requests while its three busy ones were checked
 * every 37 minutes (bench/RESULTS.md, "After: a new practice found at work explores at the usual share").
 */
function exploresForHours(input: SourceInput): boolean {
  return !input.webhooksRegistered && !input.foundAtWork && !input.streams.some((s) => s.webhookFed);
}

/**
 * Each explorable stream's phase on the exploration grid (ms), when exploration is how the practice's day is found
 * (no hours show, no webhooks): its streams take turns. Explored each at its own bound from the same start (a
 * first pass reads them all at once), they were checked together, so the practice was looked at once every bound
 * (two hours and more at the default budget) and its opening found up to that late; in turns, one of them looks
 * every bound / n on average, and the first to find the practice at work wakes the others (observe.ts,
 * atWorkSince). The grid's period is the bound unstretched: the stretch falls as the day goes on, and a grid that
 * moved with it would move turns already due out of reach (wake.ts: what is due stays due).
 */
const phasesCache = new WeakMap<SourceInput, ExplorePhases | null>();
function explorePhases(input: SourceInput): ExplorePhases | null {
  let phases = phasesCache.get(input);
  if (phases === undefined) phasesCache.set(input, (phases = phasesOf(input)));
  return phases;
}

function phasesOf(input: SourceInput): ExplorePhases | null {
  const slots = input.activeSlots;
  if (!slots || slots.some((v) => v === 0) || !exploresForHours(input)) return null;
  const bound = exploreBound(input);
  if (bound === null) return null;
  // The busiest first, each at the golden ratio's next multiple (modulo 1) of the period: the first k turns are spread
  // evenly for every k, so the streams that show the practice at work soonest look at it in evenly spaced turns.
  const usual = (s: StreamInput) => (s.modelRates ? s.modelRates.reduce((a, b) => a + b, 0) : 0);
  const streams = input.streams
    .filter(explorable)
    .map((s, order) => ({ resource: s.resource, usual: usual(s), order }))
    .sort((a, b) => b.usual - a.usual || a.order - b.order);
  const period = bound * MINUTE;
  return { period, phase: new Map(streams.map((s, k) => [s.resource, ((k * GOLDEN) % 1) * period])) };
}

/** The golden ratio's fractional part: its multiples modulo 1 are the most evenly spread sequence of phases. */
const GOLDEN = (Math.sqrt(5) - 1) / 2;

interface ExplorePhases {
  /** The grid's period, ms: the unstretched exploration bound. */
  period: number;
  /** Each explorable stream's offset on it, ms. */
  phase: Map<string, number>;
}

/**
 * Whether a stream's turn on the exploration grid (explorePhases) came, a third of a period or more after its last
 * check: a stream checked between its turns (by its rate, or woken) keeps its place on the grid, and waits up to a
 * third more than the bound for its next turn rather than taking one soon after that check.
 */
function turnCame(phase: number, period: number, last: number, now: number): boolean {
  const latest = phase + Math.floor((now - phase) / period) * period;
  return latest >= last + period / 3;
}

/** Minutes of [from, to) in the practice's active hours. */
function activeMinutes(slots: Uint8Array, timeZone: string, from: number, to: number): number {
  let minutes = 0;
  if (to > from) forEachSlotPiece(from, to, timeZone, (slot, a, b) => (minutes += slots[slot] ? (b - a) / MINUTE : 0));
  return minutes;
}

/**
 * The exploring checks a polled stream gets before the reset, counted at their instants (decide): one each time its
 * active minutes since its last check reach the exploration bound, or, where its streams take turns (explorePhases),
 * one at each of its turns from a third of a period after its last check. Counted as a share of the active minutes
 * left instead (a bound of four hours, seven hours before closing: 1.75), a stream explored at 11:59 was priced at
 * 1.75 more checks though its next turn, at 15:59, would be its last; explored then, it was still priced at 0.8 for an
 * evening that has none. Through the afternoon the plan held three requests or so back from the busy streams for
 * exploring that would not come, and gave them back only as the active hours ended: the common interval rose from 15
 * to 17 minutes at 16:00 and fell back to 15 at 18:30 on the 3x surge (bench/RESULTS.md, "After: checks counted as
 * they come, and a day's activity read up to what was read"). A count is the same at every instant between two
 * checks of the stream, as the wake needs (src/scheduler/wake.ts): its active minutes since the last check grow as
 * those left shrink.
 */
function exploreChecks(explore: number | null, count: ExploreCount | null): number {
  if (explore === null || count === null) return 0;
  return count.turns ?? Math.floor(count.minutes / explore);
}

/**
 * What exploreChecks counts whatever the bound (a plan tries several): the checks at the stream's turns where its
 * streams take turns (`turns`), else its active minutes since its last check and to the reset, with a tick's margin,
 * which the bound divides (`minutes`). Null where none are counted (no active hours known, a backfill).
 */
interface ExploreCount {
  turns: number | null;
  minutes: number;
}

function exploreCount(s: StreamInput, input: SourceInput, horizon: Horizon): ExploreCount | null {
  const slots = input.activeSlots;
  if (!slots || s.backfill) return null;
  const now = input.now.getTime();
  const last = Math.min(s.lastCheckAt?.getTime() ?? now, now);
  const phases = explorePhases(input);
  const phase = phases?.phase.get(s.resource);
  if (phases && phase !== undefined) {
    const { period } = phases;
    const first = phase + Math.ceil((last + period / 3 - phase) / period) * period;
    const end = input.resetsAt.getTime();
    return { turns: first > end ? 0 : Math.floor((end - first) / period) + 1, minutes: Number.NaN };
  }
  let left = 0;
  for (const [slot, minutes] of horizon) if (slots[slot]) left += minutes;
  const margin = input.settings.tickSeconds / 60;
  return { turns: null, minutes: activeMinutes(slots, input.timeZone, last, now) + left + margin };
}

/** The rest of the quota day as (slot, minutes) pieces: every evaluation of a plan walks the same ones. */
type Horizon = ReadonlyArray<readonly [slot: number, minutes: number]>;

function horizonOf(input: SourceInput): Horizon {
  return piecesOf(input.now.getTime(), input.resetsAt.getTime(), input.timeZone);
}

/**
 * [from, to) as (slot, minutes) pieces in a zone, the last PIECES_KEPT asked kept: the sources planned at one tick
 * share its instant, and most share their zone and the end of their quota day, so they walk the same pieces. Read,
 * never written into.
 */
function piecesOf(from: number, to: number, timeZone: string): Horizon {
  for (const k of piecesKept) if (k.from === from && k.to === to && k.timeZone === timeZone) return k.pieces;
  const pieces: Array<[number, number]> = [];
  if (to > from) forEachSlotPiece(from, to, timeZone, (slot, a, b) => pieces.push([slot, (b - a) / MINUTE]));
  if (piecesKept.length >= PIECES_KEPT) piecesKept.shift();
  piecesKept.push({ from, to, timeZone, pieces });
  return pieces;
}
const PIECES_KEPT = 8;
const piecesKept: Array<{ from: number; to: number; timeZone: string; pieces: Horizon }> = [];

/**
 * A polled stream expected to bring at most this share of the changes of the
 * practice's busiest polled stream today is left out of the common interval
 * (the tail rule, commonInterval): memberships beside appointments, 10 changes
 * a day against 300. Such a stream carries a few of the day's changes, so
 * checking it as often as the busiest streams buys little of the day's tail,
 * and on a busy day (a surge, when it passes BUSY_PER_HOUR) its checks were a
 * fourth share of the interval's budget taken from the streams that carry the
 * changes. It keeps the exchange rate, its exploration, its own freshness
 * target and its floor, and today's evidence still raises it (a burst on it
 * is a share of its own).
 *
 * None is minor while the model knows no hours of the practice (hoursKnown:
 * a new practice): its streams' shares are then the first pass's history and
 * what a few checks found, not a day of its own. On a new practice's first
 * day orders, checked at 08:14 by its exploration turn two minutes before its
 * first change, was priced from that empty window under a twentieth of
 * appointments' day (today's rates hold a practice with no hours busy until
 * midnight) and left to its next turn at 12:12: its changes from 08:16 waited
 * up to 235 minutes (bench/RESULTS.md, "After: no stream is minor while the
 * practice's hours are unknown").
 */
export const MINOR_SHARE = 0.05;
const NO_MINOR: ReadonlySet<string> = new Set();

/**
 * The polled streams of MINOR_SHARE, by today's rates over the quota day. Kept with the streams, which the inputs a
 * guess makes at each tick it tries share (each a copy of one input at another instant), for the quota day and zone.
 */
const minorCache = new WeakMap<readonly StreamInput[], Array<{ end: number; timeZone: string; minor: ReadonlySet<string> }>>();
function minorStreams(input: SourceInput): ReadonlySet<string> {
  if (input.activeSlots && !hoursKnown(input.activeSlots)) return NO_MINOR;
  const end = input.resetsAt.getTime();
  const { timeZone } = input;
  return keptWith(
    minorCache,
    input.streams,
    (k) => k.end === end && k.timeZone === timeZone,
    () => ({ end, timeZone, minor: minorOf(input.streams, timeZone, end) }),
  ).minor;
}

function minorOf(streams: readonly StreamInput[], timeZone: string, end: number): ReadonlySet<string> {
  const out = new Set<string>();
  const polled = streams.filter(explorable);
  if (polled.length < 2) return out;
  const totals = polled.map((x) => dayTotal(x.rates, timeZone, end));
  const most = Math.max(...totals);
  polled.forEach((x, i) => {
    if (totals[i]! < MINOR_SHARE * most) out.add(x.resource);
  });
  return out;
}

/**
 * A stream's changes over the 24 hours to `end` at `rates`, kept with the rates (a stream's rates are the same array
 * from plan to plan until its inputs change: observe.ts keeps them).
 */
function dayTotal(rates: Float64Array, timeZone: string, end: number): number {
  return keptWith(
    dayTotalCache,
    rates,
    (k) => k.end === end && k.timeZone === timeZone,
    () => {
      let total = 0;
      forEachSlotPiece(end - 24 * 3_600_000, end, timeZone, (slot, a, b) => (total += (rates[slot]! * ((b - a) / MINUTE)) / 60));
      return { end, timeZone, total };
    },
  ).total;
}
const dayTotalCache = new WeakMap<Float64Array, Array<{ end: number; timeZone: string; total: number }>>();

function boundsOf(s: StreamInput, settings: PlanSettings, stretch: number, explore: number | null, interval: number | null = null): Bounds {
  const target = s.maxStalenessMinutes === null ? null : s.maxStalenessMinutes * stretch;
  const maxWait = Math.min(settings.notifiedWithinMinutes, s.maxStalenessMinutes ?? Number.POSITIVE_INFINITY) * stretch;
  return {
    target: s.webhookFed ? null : target,
    maxWait,
    explore: explore !== null && explorable(s) ? explore * stretch : null,
    interval: interval !== null && explorable(s) ? interval : null,
  };
}

function bounded(s: StreamInput, settings: PlanSettings, stretch: number, explore: number | null, interval: number | null = null): Bounded {
  return { ...s, ...boundsOf(s, settings, stretch, explore, interval) };
}

/**
 * The rate that decides a stream's busy hours for the interval rule. Now:
 * today's, or the forecast's when today's evidence put it lower (a check or
 * two that found fewer changes than forecast is chance as often as not at
 * these counts, about one change a check; a day quieter than usual still
 * lowers the forecast itself, through today's activity factor). In the
 * hours to come: the forecast's. Today's evidence carries into them as a
 * decaying excess, which the exchange rate prices, but an hour the practice
 * is usually closed is not planned as busy on its strength: a lively
 * afternoon would otherwise book the evening's checks and space the
 * afternoon's wider. A rush in hours the forecast calls closed (the evening
 * a practice moved to) is different: nothing says when it ends, so the hours
 * after it are planned as busy as it is now. Planned by the decaying excess,
 * the interval would be set as if the rush were ending, checks would come
 * every minute while the budget lasted, and the rest of the rush would go
 * unread; planned to last, it leaves budget over if it ends early, which the
 * end-of-day sweep spends.
 */
function busyRate(s: StreamInput, slot: number, nowSlot: number, rush?: boolean): number {
  // `rush`: unforeseen(s, nowSlot), when the caller walking the day has it already (it is the same at every hour).
  return busyRateOf(s.rates, s.forecastRates, slot, nowSlot, rush ?? (slot !== nowSlot && unforeseen(s, nowSlot)));
}

/** busyRate from a stream's rates, its forecast (when today's evidence moved them) and whether a rush is on. */
function busyRateOf(rates: Float64Array, forecast: Float64Array | undefined, slot: number, nowSlot: number, rush: boolean): number {
  if (!forecast) return rates[slot]!;
  if (slot === nowSlot) return Math.max(rates[slot]!, forecast[slot]!);
  if (rush) return Math.max(rates[slot]!, rates[nowSlot]!);
  return forecast[slot]!;
}

/**
 * The safety-net checks a stream fed by webhooks will get before the reset:
 * one `safetyNetMinutes` after its last check, and every `safetyNetMinutes`
 * after that, through the hours too quiet for a notification to be expected
 * in that time (a notified check in a busier hour starts the count again).
 * Counted at their instants, not as a share of the quiet minutes: a stream
 * read at 19:20 gets none before midnight, where the share priced the
 * evening at a check or so a stream, held back from the afternoon.
 */
function safetyChecks(s: StreamInput, input: SourceInput, horizon: Horizon, perHour: readonly number[]): number {
  const net = input.settings.safetyNetMinutes * MINUTE;
  let t = input.now.getTime();
  let next = (s.lastCheckAt?.getTime() ?? t) + net;
  let n = 0;
  for (let i = 0; i < horizon.length; i++) {
    const end = t + horizon[i]![1] * MINUTE;
    if ((perHour[i]! / 60) * input.settings.safetyNetMinutes >= 1) next = end + net;
    else
      while (next < end) {
        n++;
        next += net;
      }
    t = end;
  }
  return n;
}

/** Today's rate against the forecast's above which an open hour is a rush whose end nobody knows (notifiedRates). */
const RUSH_OVER_FORECAST = 2;

/**
 * The rates that price a stream fed by webhooks in each piece of the rest
 * of the day (horizonOf): today's, but the forecast's in an hour the
 * forecast calls closed unless a rush is on now. Its notifications say when changes come, so the
 * evidence of a busy afternoon fading into the closed evening would book
 * checks for changes nobody expects, and the afternoon's bounds would
 * stretch to keep budget for them (on a day of three times the usual
 * changes, 20 minutes from 16:30, with requests left at midnight). A rush is
 * on when the forecast did not expect the hour's changes at all
 * (unforeseen); in an open hour, when today's rate is more than
 * RUSH_OVER_FORECAST times the forecast's; in a closed one, when today's
 * busy rate has not fallen below the forecast of the hour before (the
 * evening of a practice whose hours moved, where a fading afternoon falls
 * below it). Then the hours after it are priced by today's rates. Computed
 * once a curve: the exchange rate's and the interval's searches walk them
 * many times, and the safety nets read the same.
 */
function notifiedRates(s: StreamInput, horizon: Horizon): number[] {
  const out: number[] = [];
  const f = s.forecastRates;
  const nowSlot = horizon[0]![0];
  // Whether a rush is on is decided now, once for every hour to come.
  let rush = true;
  if (f && !unforeseen(s, nowSlot)) {
    const now = s.rates[nowSlot]!;
    rush = activeHour(f[nowSlot]!) ? now > RUSH_OVER_FORECAST * f[nowSlot]! : busyHour(now) && now >= f[(nowSlot + SLOTS - 1) % SLOTS]!;
  }
  for (let i = 0; i < horizon.length; i++) {
    const slot = horizon[i]![0];
    out[i] = rush || slot === nowSlot || activeHour(f![slot]!) ? s.rates[slot]! : f![slot]!;
  }
  return out;
}

/**
 * A rush the forecast did not expect at all is on: its hours to come are planned by today's rates. "At all": the
 * forecast calls the hour closed (less than a change in it), and today's evidence was found in hours it calls closed
 * too. A slow stream a little above its forecast in an open hour (memberships at 2.1 changes an hour against 1.4 on a
 * surge day) has no rush of unknown end: planned as busy until midnight, it took a third of the evening's budget from
 * the busy streams. Nor has a busy afternoon's evidence fading into the closed evening (afterClosing gives that
 * stream its closing check).
 */
function unforeseen(s: StreamInput, nowSlot: number): boolean {
  if (s.forecastRates === undefined || !busyHour(s.rates[nowSlot]!) || activeHour(s.forecastRates[nowSlot]!)) return false;
  return !s.evidence || !activeHour(s.evidence.forecastPerHour);
}

/**
 * The forecast calls this hour closed and today's busy rate now is only the afternoon's evidence fading (not a rush
 * of unknown end), and the stream has not been checked since the hour began: its closing check is due, once. Read
 * by today's rates alone the hour still looks busy, and on a tight day no other rule reads the last minutes of the
 * afternoon before midnight.
 */
function afterClosing(s: StreamInput, input: SourceInput, slot: number, now: number): boolean {
  const f = s.forecastRates;
  if (!f || activeHour(f[slot]!) || unforeseen(s, slot)) return false;
  return s.lastCheckAt !== null && s.lastCheckAt.getTime() < nextSlotEdge(now - 3_600_000, input.timeZone);
}

/** Another stream's surprise is news to this polled stream: it has not been checked since it was found. */
function woken(s: StreamInput): boolean {
  const at = s.surpriseElsewhereAt;
  return at !== undefined && explorable(s) && s.lastCheckAt !== null && s.lastCheckAt.getTime() < at.getTime();
}

/**
 * Minutes between the checks an interval gives, as they come. A stream is due at the first tick at which the
 * interval has passed since its last check, and its last check is what that check read up to: the source's lag
 * before it started (observe.ts, lastCheckAt). So its checks come the interval less the lag apart, rounded up to
 * the tick: every 14 minutes at an interval of 14.9, a lag of a minute and a tick of one. What a plan counts
 * decides where the day's spend goes. Counted at the interval itself (as before), the plan expected fewer checks
 * than came: it spent ahead in the morning at gaps of 14 minutes and stretched the afternoon's to 16-17 (the widest
 * gaps make the tail). Counted a tick short, with no rounding (as before that), it expected more than came, kept
 * budget back all day and spent it in the last busy hour. Half a tick long spent ahead as well (bench/RESULTS.md,
 * "After: the plan counts the interval's checks as they come", and "After: checks counted as they come, and a day's
 * activity read up to what was read").
 */
function spacing(interval: number, input: SourceInput): number {
  const tick = Math.max(1 / 60, input.settings.tickSeconds / 60);
  const gap = interval - (input.lagMs ?? 0) / MINUTE;
  // A hair under a whole number of ticks is that number: the interval is searched in floating point.
  return Math.max(tick, Math.ceil(gap / tick - 1e-9) * tick);
}

/**
 * Minutes between checks the common interval asks of a polled stream changing `perHour`: never more often than once
 * per expected change, and SLACK_FACTOR times the interval in its slack hours (slackSlots).
 */
function intervalAt(interval: number | null, perHour: number, cost: number, slack = false): number {
  if (interval === null || !busyHour(perHour)) return Number.POSITIVE_INFINITY;
  return Math.max(slack ? interval * SLACK_FACTOR : interval, (cost * 60) / perHour);
}

/**
 * The tail rule's slack. The busy streams' 95th percentile pools their
 * changes, so a twentieth of them may wait longer than it without moving it,
 * and the cheapest to leave waiting are those of the slowest busy
 * stream-hours (orders in the practice's last hour, about 3 changes an hour
 * against appointments' 15 at their peak): a check there reads few, where a
 * cron checks every busy hour alike. The busy hours of the streams on the
 * common interval that together bring SLACK_SHARE of their busy changes over
 * the quota day, slowest first, are checked at SLACK_FACTOR times the
 * interval, and the interval is searched with them counted so: the requests
 * they save tighten every other busy hour.
 *
 * The hours are ranked by today's busy rates (busyRate): the forecast, today's
 * own in the hour now, and a rush's where one the forecast did not expect is
 * on. Ranked by the learned model alone, the hour a practice's rush moved to
 * was slack because the model calls it its slowest (the evening day: 37
 * minutes at p95 against 10.5). Hours of equal rates are slack together or
 * not at all: none of them is slower than the others. A function of the
 * rates and the hour now, so the same at every tick of a wake's segment.
 */
export const SLACK_SHARE = 0.04;
export const SLACK_FACTOR = 2;
const NO_SLACK: ReadonlySet<number> = new Set();
/** What the slack hours are ranked from: a stream on the common interval's rates, and whether a rush is on. */
interface SlackPart {
  resource: string;
  rates: Float64Array;
  forecast: Float64Array | undefined;
  rush: boolean;
}
// Kept with the first such stream's rates, which are the same array from plan to plan until its readings change
// (observe.ts keeps them), beside the rest of what they were ranked from: every plan of a wake's segment and of the
// ticks after it ranks the same hours, and ranking them again was a tenth of a plan.
const slackCache = new WeakMap<
  Float64Array,
  Array<{ nowSlot: number; end: number; timeZone: string; parts: SlackPart[]; slack: ReadonlyMap<string, ReadonlySet<number>> }>
>();
// And with the list of streams, which a guess's inputs at the ticks it tries share (a copy of one input at each
// instant), by the hour and quota day; and with the input itself: a plan asks for them once a stream and again as it
// decides, and finding the hour now in the practice's zone costs more than the lookup.
const slackByStreams = new WeakMap<
  readonly StreamInput[],
  Array<{ nowSlot: number; end: number; timeZone: string; slack: ReadonlyMap<string, ReadonlySet<number>> }>
>();
const slackByInput = new WeakMap<SourceInput, ReadonlyMap<string, ReadonlySet<number>>>();
export function slackSlots(input: SourceInput): ReadonlyMap<string, ReadonlySet<number>> {
  const known = slackByInput.get(input);
  if (known) return known;
  const nowSlot = slotOf(input.now.getTime(), input.timeZone);
  const end = input.resetsAt.getTime();
  const { timeZone } = input;
  const slack = keptWith(
    slackByStreams,
    input.streams,
    (k) => k.nowSlot === nowSlot && k.end === end && k.timeZone === timeZone,
    () => ({ nowSlot, end, timeZone, slack: slackKept(input, nowSlot) }),
  ).slack;
  slackByInput.set(input, slack);
  return slack;
}

function slackKept(input: SourceInput, nowSlot: number): ReadonlyMap<string, ReadonlySet<number>> {
  const minor = minorStreams(input);
  const parts: SlackPart[] = input.streams
    .filter((s) => explorable(s) && !minor.has(s.resource))
    .map((s) => ({ resource: s.resource, rates: s.rates, forecast: s.forecastRates, rush: unforeseen(s, nowSlot) }));
  if (parts.length === 0) return new Map();
  const end = input.resetsAt.getTime();
  const { timeZone } = input;
  return keptWith(
    slackCache,
    parts[0]!.rates,
    (k) => k.nowSlot === nowSlot && k.end === end && k.timeZone === timeZone && sameParts(k.parts, parts),
    () => ({ nowSlot, end, timeZone, parts, slack: slackRanked(parts, nowSlot, end, timeZone) }),
  ).slack;
}

function sameParts(a: readonly SlackPart[], b: readonly SlackPart[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.resource !== y.resource || x.rates !== y.rates || x.forecast !== y.forecast || x.rush !== y.rush) return false;
  }
  return true;
}

function slackRanked(
  parts: readonly SlackPart[],
  nowSlot: number,
  end: number,
  timeZone: string,
): ReadonlyMap<string, ReadonlySet<number>> {
  const out = new Map<string, Set<number>>();
  const day = piecesOf(end - 24 * 3_600_000, end, timeZone);
  const hours: Array<{ resource: string; slot: number; rate: number; changes: number }> = [];
  let total = 0;
  for (const p of parts) {
    for (const [slot, minutes] of day) {
      const rate = busyRateOf(p.rates, p.forecast, slot, nowSlot, p.rush);
      if (!busyHour(rate)) continue;
      const changes = (rate * minutes) / 60;
      hours.push({ resource: p.resource, slot, rate, changes });
      total += changes;
    }
  }
  hours.sort((a, b) => a.rate - b.rate);
  const share = SLACK_SHARE * total;
  let taken = 0;
  for (let i = 0; i < hours.length;) {
    let j = i;
    let changes = 0;
    while (j < hours.length && hours[j]!.rate === hours[i]!.rate) changes += hours[j++]!.changes;
    if (taken + changes > share) break;
    taken += changes;
    for (; i < j; i++) {
      const h = hours[i]!;
      let set = out.get(h.resource);
      if (!set) out.set(h.resource, (set = new Set()));
      set.add(h.slot);
    }
  }
  return out;
}

/** A stream's slack hours (slackSlots): none for a stream off the common interval. */
function slackOf(input: SourceInput, resource: string): ReadonlySet<number> {
  return slackSlots(input).get(resource) ?? NO_SLACK;
}

/**
 * The factors bounds may stretch by: coarse steps, so a stretch (and its
 * warning) changes a few times on a bad day, not at every tick. Beyond the last
 * the bounds are a day or more, which the floors already give.
 */
const STRETCHES = [1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 36, 48, 72, 144];

interface Spend {
  /** Expected checks for the rest of the quota day, by kind. */
  polled: number;
  notified: number;
  safety: number;
  requests: number;
}

/**
 * What a plan reads of one stream whatever bounds, exchange rate and interval it tries: each piece of the rest of the
 * quota day's changes a minute and busy rate, the safety nets, the exploring checks before a bound divides them, the
 * closing check and the floor. A plan prices its streams at up to three stretches before its two searches: each stream
 * is walked once for all of them (PlanCurves), not at each stretch (with its active minutes since its last check).
 */
interface StreamWalk {
  /** Each piece's minutes (the horizon's, read without its pairs). */
  minutes: number[];
  /** Changes a minute in each piece (the notified rates for a stream fed by webhooks). */
  perMinute: number[];
  /** Minutes a piece takes to bring the changes a check costs: cost / perMinute. */
  perChange: number[];
  /** Polled: whether each piece is an hour the stream is expected to change (its freshness target holds then). */
  active: boolean[];
  /** Polled: the rate that decides each piece's busy hours (busyRate). */
  busyNow: number[];
  /** Polled: whether each piece is one of the stream's slack hours (slackSlots). */
  slack: boolean[];
  safety: number;
  /** Polled: its exploring checks before the bound divides them (exploreCount). */
  explore: ExploreCount | null;
  /** The closing check (decide): one more as its busy hours end today. */
  closing: boolean;
  /**
   * The closing look (decide) is to come: the practice's active hours end today, the stream active in the last of them.
   * Held for at the end of a spent day (holdForClosings), not counted in the plan's spend.
   */
  look: boolean;
  floorDue: boolean;
  woken: boolean;
}

function walkOf(s: StreamInput, input: SourceInput, horizon: Horizon): StreamWalk {
  const { settings } = input;
  const nowSlot = horizon[0]![0];
  const n = horizon.length;
  const minutes: number[] = [];
  const perMinute: number[] = [];
  const perChange: number[] = [];
  const active: boolean[] = [];
  const busyNow: number[] = [];
  const slack: boolean[] = [];
  const slackSet = s.webhookFed ? NO_SLACK : slackOf(input, s.resource);
  let busyAhead = false;
  let look = false;
  const slots = input.activeSlots;
  const notified = s.webhookFed ? notifiedRates(s, horizon) : null;
  const rush = unforeseen(s, nowSlot);
  for (let i = 0; i < n; i++) {
    const slot = horizon[i]![0];
    minutes[i] = horizon[i]![1];
    const perHour = notified ? notified[i]! : s.rates[slot]!;
    perMinute[i] = perHour / 60;
    perChange[i] = s.cost / perMinute[i]!;
    if (!s.webhookFed) {
      active[i] = activeHour(perHour);
      busyNow[i] = busyRate(s, slot, nowSlot, rush);
      slack[i] = slackSet.has(slot);
      if (explorable(s) && busyNow[i]! >= CLOSING_MIN_PER_HOUR) busyAhead = true;
      // The closing look (decide) comes in the first hour after the practice's active ones, for a stream active in
      // the last of them.
      if (
        explorable(s) &&
        slots &&
        i > 0 &&
        !slots[slot] &&
        slots[horizon[i - 1]![0]] &&
        closingLookHour(busyNow[i - 1]!) &&
        !busyHour(busyNow[i]!)
      )
        look = true;
    }
  }
  const closing = busyAhead && !busyHour(busyRate(s, horizon[n - 1]![0], nowSlot, rush));
  return {
    minutes,
    perMinute,
    perChange,
    active,
    busyNow,
    slack,
    safety: notified ? safetyChecks(s, input, horizon, notified) : 0,
    explore: s.webhookFed ? null : exploreCount(s, input, horizon),
    closing,
    look: look && !closing,
    floorDue: (s.lastCheckAt?.getTime() ?? input.now.getTime()) + settings.floorHours * 3_600_000 <= input.resetsAt.getTime(),
    woken: woken(s),
  };
}

/**
 * A stream's spend under its bounds as a function of the exchange rate and the common interval, for the searches that
 * evaluate the same stream many times (findMu, commonInterval). Each evaluation does the arithmetic piece by piece,
 * in the same order, whatever else was asked before: a plan is the same made from fresh curves or kept ones. One
 * object a curve, its arrays made at the first evaluation that needs them: a plan makes one for each stream at each
 * stretch it tries, most of them asked once.
 */
class SpendCurve {
  private readonly s: StreamInput;
  private readonly b: Bounds;
  private readonly input: SourceInput;
  /** Null: a backfill, or no day left (it spends nothing). */
  private readonly walk: StreamWalk | null;
  private readonly explored: number;
  /**
   * Where the interval is none its spacing is Infinity in every piece (unless the lag is not a number), and at no
   * exchange rate at all a piece's interval is its target or Infinity: the pieces priced at their target are summed
   * alone, in the same order, to the same result (the plan prices every stretch it tries so).
   */
  private readonly unbound: boolean;
  // A search holds one of the two arguments while it moves the other (findMu the interval, commonInterval the
  // exchange rate): what each piece takes from the held one is kept from the evaluation before. For a polled stream,
  // its interval in a piece is min(pollInterval(mu), bound(interval)), with bound the spacing of the common interval:
  // Math.min is exact and associative, so the result is that of pricing each piece afresh, to the bit.
  private poll: number[] | null = null;
  private bound: number[] | null = null;
  private pollMu: number | undefined;
  private boundInterval: number | null | undefined;
  /** The last evaluation's checks by kind (spend reads them). */
  private polled = 0;
  private notified = 0;

  constructor(s: StreamInput, b: Bounds, input: SourceInput, walk: StreamWalk | null, unbound: boolean) {
    this.s = s;
    this.b = b;
    this.input = input;
    this.walk = walk;
    this.explored = walk ? exploreChecks(b.explore, walk.explore) : 0;
    this.unbound = unbound;
  }

  /** The stream's requests at exchange rate `mu`, its busy hours held to the common interval `interval`. */
  requests(mu: number, interval: number | null): number {
    const walk = this.walk;
    this.polled = 0;
    this.notified = 0;
    if (!walk) return 0;
    const s = this.s;
    const b = this.b;
    const { minutes, perMinute, active, safety } = walk;
    const n = minutes.length;
    let polled = 0;
    let notified = 0;
    if (!s.webhookFed && mu === Number.POSITIVE_INFINITY && interval === null && this.unbound) {
      const target = b.target;
      if (target !== null && Number.isFinite(target)) for (let i = 0; i < n; i++) if (active[i]) polled += minutes[i]! / target;
      polled = Math.max(polled, this.explored);
    } else if (s.webhookFed) {
      const debounce = this.input.settings.debounceSeconds / 60;
      for (let i = 0; i < n; i++) {
        const pm = perMinute[i]!;
        const wait = Math.min(Math.max(notifiedDelay(mu, pm, s.cost), debounce), b.maxWait);
        if (pm > 0 && Number.isFinite(wait)) notified += (minutes[i]! * pm) / (1 + pm * wait);
      }
    } else {
      const poll = this.pollAt(mu, walk);
      const bound = this.boundAt(interval, walk);
      for (let i = 0; i < n; i++) {
        const x = Math.min(poll[i]!, bound[i]!);
        if (Number.isFinite(x)) polled += minutes[i]! / x;
      }
      // Exploring is a least count of checks: where the rates and the interval check a stream at least as often, it adds none.
      polled = Math.max(polled, this.explored);
    }
    if (walk.woken) polled += 1;
    // The closing look is not: counted, it took its request from the busy streams all day (holdForClosings keeps it).
    if (walk.closing) polled += 1;
    // Notifications already waiting are a check to come, whatever the rates say of the rest of the day.
    if (s.webhookFed && s.notified.count > 0) notified += 1;
    if (walk.floorDue && polled + notified + safety < 1) polled += 1;
    this.polled = polled;
    this.notified = notified;
    return (polled + notified + safety) * s.cost;
  }

  /** The same, by kind. */
  spend(mu: number, interval: number | null): Spend {
    const requests = this.requests(mu, interval);
    return { polled: this.polled, notified: this.notified, safety: this.walk?.safety ?? 0, requests };
  }

  private pollAt(mu: number, walk: StreamWalk): number[] {
    const poll = (this.poll ??= []);
    if (this.pollMu !== undefined && Object.is(mu, this.pollMu)) return poll;
    this.pollMu = mu;
    const { perMinute, perChange, active } = walk;
    const target = this.b.target;
    // pollInterval, with its mu-only product taken once: (2 * mu * cost) / pm is ((2 * mu) * cost) / pm.
    const k = Number.isFinite(mu) ? 2 * mu * this.s.cost : Number.NaN;
    for (let i = 0; i < perMinute.length; i++) {
      const pm = perMinute[i]!;
      let x = Number.POSITIVE_INFINITY;
      if (pm > 0) x = Math.max(Number.isFinite(mu) ? Math.sqrt(k / pm) : Number.POSITIVE_INFINITY, perChange[i]!);
      poll[i] = target !== null && active[i] ? Math.min(x, target) : x;
    }
    return poll;
  }

  private boundAt(interval: number | null, walk: StreamWalk): number[] {
    const bound = (this.bound ??= []);
    if (this.boundInterval !== undefined && Object.is(interval, this.boundInterval)) return bound;
    this.boundInterval = interval;
    const { busyNow, slack } = walk;
    for (let i = 0; i < busyNow.length; i++) bound[i] = spacing(intervalAt(interval, busyNow[i]!, this.s.cost, slack[i]), this.input);
    return bound;
  }
}

/**
 * The exchange rate is found to a thousandth: a check is due once its staleness reaches mu times its cost, and
 * a thousandth of mu is seconds of one change's wait. Finer, the search cost most of a plan.
 */
export const MU_PRECISION = 1e-3;

/** What the pinned streams' fires left today cost. */
function pinnedSpend(input: SourceInput): number {
  return input.pinned.reduce((n, p) => n + p.firesLeft * p.cost, 0);
}

/**
 * A plan's walks (StreamWalk) and spend curves by stream, built once for the plan's stretches, its searches
 * (commonInterval's and findMu's) and its last spend of each stream. A curve reads every field of a stream's bounds
 * but `interval`, which each evaluation is given: the streams a plan passes for one resource differ in nothing else
 * (the common interval is searched only at the plan's stretch of 1, with the plan's exploration bound), so one curve
 * serves them all. A walk reads none of the bounds, so one serves every stretch tried.
 */
interface PlanCurves {
  input: SourceInput;
  horizon: Horizon;
  walks: Map<string, StreamWalk>;
  curves: Map<string, SpendCurve>;
  /** The interval's spacing where there is none is Infinity (SpendCurve). */
  unbound: boolean;
}

function planCurves(input: SourceInput, horizon: Horizon): PlanCurves {
  const unbound = spacing(Number.POSITIVE_INFINITY, input) === Number.POSITIVE_INFINITY;
  return { input, horizon, walks: new Map(), curves: new Map(), unbound };
}

/** A curve of `s` under bounds `b`, from the stream's walk (made at the first asking). */
function curveUnder(pc: PlanCurves, s: StreamInput, b: Bounds): SpendCurve {
  if (s.backfill || pc.horizon.length === 0) return new SpendCurve(s, b, pc.input, null, pc.unbound);
  let walk = pc.walks.get(s.resource);
  if (!walk) {
    walk = walkOf(s, pc.input, pc.horizon);
    pc.walks.set(s.resource, walk);
  }
  return new SpendCurve(s, b, pc.input, walk, pc.unbound);
}

/** The curve of a stream under the plan's bounds, kept by resource (above). */
function curveOf(pc: PlanCurves, s: Bounded): SpendCurve {
  let curve = pc.curves.get(s.resource);
  if (!curve) {
    curve = curveUnder(pc, s, s);
    pc.curves.set(s.resource, curve);
  }
  return curve;
}

function findMu(input: SourceInput, streams: Bounded[], available: number, pc: PlanCurves): number {
  const pinned = pinnedSpend(input);
  const curvesOf = streams.map((s) => curveOf(pc, s));
  const spend = (mu: number) => pinned + curvesOf.reduce((n, c, i) => n + c.requests(mu, streams[i]!.interval), 0);
  const atZero = spend(0);
  if (atZero <= available) return 0;
  const atOne = spend(1);
  if (atOne <= available) return fallingRoot(spend, available, 0, atZero, 1, atOne, MU_SEARCH);
  // Above 1: the bracket's far end is no exchange rate at all (checks at the bounds and floors alone), which either fits
  // or nothing does.
  const atInfinity = spend(Number.POSITIVE_INFINITY);
  if (atInfinity > available) return Number.POSITIVE_INFINITY;
  const mu = fallingRoot(spend, available, 1, atOne, Number.POSITIVE_INFINITY, atInfinity, MU_SEARCH);
  return mu > MU_MAX ? Number.POSITIVE_INFINITY : mu;
}

/** An exchange rate above this is none: seconds of staleness worth a request beyond any day. */
const MU_MAX = 1e12;

/**
 * How a search moves along one argument of a spend that falls as it grows: `x` maps the argument to where the spend
 * is about linear (and `fromX` back), `done` says a bracket is narrow enough, and `past` gives the point just beyond
 * an estimate on each side, which closes the bracket when the estimate is within the precision.
 */
export interface Search {
  x(v: number): number;
  fromX(x: number): number;
  done(lo: number, hi: number): boolean;
  past(v: number, above: boolean): number;
}

/**
 * The spend falls with mu about as 1/sqrt(mu) (checks every sqrt(mu)-proportional interval), so the search moves on
 * 1/sqrt(mu), to a thousandth of mu.
 */
export const MU_SEARCH: Search = {
  x: (mu) => (mu > 0 ? 1 / Math.sqrt(mu) : Number.POSITIVE_INFINITY),
  fromX: (x) => 1 / (x * x),
  done: (lo, hi) => Number.isFinite(hi) && hi - lo <= MU_PRECISION * hi,
  past: (mu, above) => (above ? mu * (1 + 0.99 * MU_PRECISION) : mu * (1 - 0.99 * MU_PRECISION)),
};

/**
 * An estimate that moved less than this share from the one before is taken to be within the precision: the point just
 * past it is tried with it.
 */
const SETTLED = 0.25;

/**
 * The least argument in (lo, hi] at which `spend` is within `budget`, to the search's precision, given that it is not
 * at `lo` (spend fLo) and is at `hi` (spend fHi): the `hi` of the last bracket. Regula falsi on the search's `x`, with
 * the Illinois step against a side kept twice; once an estimate settles, the point just past it is tried too (a
 * bracket closes from one side only by regula falsi alone), and a round that does not halve the bracket (in log terms)
 * is followed by a bisection. The spend is a sum of pieces each capped on both sides, linear in `x` only between its
 * caps, so regula falsi alone stalls where the caps bend it.
 */
export function fallingRoot(
  spend: (v: number) => number,
  budget: number,
  lo: number,
  fLo: number,
  hi: number,
  fHi: number,
  search: Search,
): number {
  let gLo = fLo - budget;
  let gHi = fHi - budget;
  // The bracket's side `v` falls on, by its spend: returned less the budget.
  const narrow = (v: number) => {
    const g = spend(v) - budget;
    if (g > 0) {
      lo = v;
      gLo = g;
    } else {
      hi = v;
      gHi = g;
    }
    return g;
  };
  let side = 0;
  let last = Number.NaN;
  for (let round = 0; round < 100 && !search.done(lo, hi); round++) {
    const logWidth = lo > 0 && Number.isFinite(hi) ? Math.log(hi / lo) : Number.POSITIVE_INFINITY;
    let m: number;
    if (lo > 0) {
      const xLo = search.x(lo);
      const xHi = search.x(hi);
      m = search.fromX(xHi + (gHi * (xLo - xHi)) / (gHi - gLo));
      if (!(m > lo && m < hi)) m = Number.isFinite(hi) ? Math.sqrt(lo * hi) : lo * 4;
    } else m = (lo + hi) / 2;
    const settled = Math.abs(m - last) < SETTLED * m;
    last = m;
    const g = narrow(m);
    // Illinois: the end kept twice in a row has its excess spend halved, which pulls the next estimate toward it.
    if (g > 0) {
      if (side === -1) gHi /= 2;
      side = -1;
    } else {
      if (side === 1) gLo /= 2;
      side = 1;
    }
    if (settled && !search.done(lo, hi)) {
      const p = search.past(m, g > 0);
      if (p > lo && p < hi) narrow(p);
    }
    if (lo > 0 && Number.isFinite(hi) && Math.log(hi / lo) > logWidth / 2 && !search.done(lo, hi)) narrow(Math.sqrt(lo * hi));
  }
  return hi;
}

export function planSource(input: SourceInput): SourcePlan {
  const { settings } = input;
  const available = Math.max(0, input.budget - input.budgetUsed);
  const warnings: SourcePlan['warnings'] = [];
  const horizon = horizonOf(input);
  let explore = exploreBound(input);
  // The plan's walks serve every stretch tried here and the searches after (PlanCurves).
  const pc = planCurves(input, horizon);
  const pinned = pinnedSpend(input);
  // The spend at no exchange rate at all: the bounds, floors, exploration and checks already waiting.
  const cheapest = (stretch: number, exploring: number | null) =>
    pinned +
    input.streams.reduce(
      (n, s) => n + curveUnder(pc, s, boundsOf(s, settings, stretch, exploring)).requests(Number.POSITIVE_INFINITY, null),
      0,
    );
  // Exploration's share of the budget comes first: without it a burst on a stream the model calls quiet waits for
  // its floor, a day. It goes only when even the most stretched bounds and the floors do not fit beside it (a
  // budget too small for both keeps every stream read daily).
  const loosest = STRETCHES[STRETCHES.length - 1]!;
  const parts = reserveParts(input, available, horizon);
  const reserve = Math.ceil(parts.chance + parts.surprise);
  if (explore !== null && cheapest(loosest, explore / loosest) > available - reserve) explore = null;
  const withStretch = (stretch: number) => input.streams.map((s) => bounded(s, settings, stretch, explore));

  // When the bounds do not all fit what is left of the budget, they stretch
  // together, by the least step that fits, rather than one stream losing its
  // bound altogether: the day degrades gracefully and every stream keeps one.
  // Stretching buys nothing where the floors, the checks already waiting and
  // the notified changes expected at the loosest bounds overrun the budget by
  // themselves: by a fraction of a request (an expectation, not a count), that
  // would set the bounds to a day and hold notified changes past midnight
  // while requests were left to read them. The bounds stretch only as far as
  // it saves a request.
  const fits = Math.max(available, cheapest(loosest, explore) + 1);
  const stretch = STRETCHES.find((f) => cheapest(f, explore) <= fits) ?? loosest;
  if (stretch > 1) {
    const within = (m: number) => (m * stretch >= 120 ? `${Math.round((m * stretch) / 6) / 10} h` : `${Math.round(m * stretch)} min`);
    const reason = `the budget of ${input.budget} requests a day cannot carry more today`;
    for (const s of input.streams) {
      if (s.backfill) continue;
      if (s.webhookFed) {
        const bound = Math.min(settings.notifiedWithinMinutes, s.maxStalenessMinutes ?? Number.POSITIVE_INFINITY);
        warnings.push({
          resource: s.resource,
          message: `notified changes of ${s.resource} are read within ${within(bound)} instead of ${bound} min: ${reason}`,
        });
      } else if (s.maxStalenessMinutes !== null) {
        warnings.push({
          resource: s.resource,
          message: `${s.resource} is checked at least every ${within(s.maxStalenessMinutes)} in its busy hours instead of every ${s.maxStalenessMinutes} min (maxStalenessMinutes): ${reason}`,
        });
      }
    }
  }

  // The spend the exchange rate plans keeps a reserve in hand: about one
  // standard deviation of the random count of checks notifications trigger,
  // and a tenth for a day busier than the model expects (today's evidence and
  // activity factor catch up within hours), so a busy morning does not leave
  // the afternoon without budget. It is spent by the bounds and floors, never
  // planned away, and released over the last RESERVE_RELEASE_HOURS of the
  // quota day: budget left at the reset is lost.
  const planFor = available - reserve;
  // The tail rule: the busy hours of every polled stream share one interval,
  // the tightest the budget carries (below). It is set afresh at every tick
  // from what is left for the rest of the day, so a busier day than expected
  // widens it for the hours to come, not by running out: the reserve for
  // surprise is not held back from it, and the spread of chance is released
  // as the day's expected changes go by. Held back early and released late,
  // they would space the morning's checks wider than the afternoon's, and the
  // widest waits make the tail.
  const interval =
    stretch === 1 && available > 0
      ? commonInterval(input, horizon, withStretch(1), available - Math.ceil(intervalChance(input, parts) * parts.byDemand), pc)
      : null;
  const minor = minorStreams(input);
  const streams = input.streams.map((s) => bounded(s, settings, stretch, explore, minor.has(s.resource) ? null : interval));
  const mu = available <= 0 ? Number.POSITIVE_INFINITY : findMu(input, streams, planFor, pc);
  const planned: PlannedSpend = { check: 0, webhook: 0, full: 0, backfill: 0 };
  for (const p of input.pinned)
    planned[p.purpose === 'full' ? 'full' : p.purpose === 'webhook' ? 'webhook' : 'check'] += p.firesLeft * p.cost;
  const phases = explorePhases(input);
  const closingNow = new Set<string>();
  // A full refresh whose pages do not fit in what is left waits for the reset (decide): the sweep may spend its share.
  let unfit = 0;
  const plans: StreamPlan[] = streams.map((s) => {
    const spend = curveOf(pc, s).spend(mu, s.interval);
    if (s.kind === 'full') planned.full += spend.requests;
    if (s.kind === 'full' && Math.round(s.cost) > available) unfit += spend.requests;
    else {
      planned.check += (spend.polled + spend.safety) * s.cost;
      planned.webhook += spend.notified * s.cost;
    }
    const hasBound = s.webhookFed || s.maxStalenessMinutes !== null;
    const { closing, ...decided } = decide(s, input, mu, available, phases);
    if (closing) closingNow.add(s.resource);
    return {
      resource: s.resource,
      ...decided,
      expectedChecks: spend.polled + spend.notified + spend.safety,
      targetHonoured: hasBound ? stretch === 1 : null,
    };
  });
  holdForClosings(input, pc, streams, plans, available, closingNow);
  const backfillPages = input.streams.filter((s) => s.backfill).reduce((n, s) => n + (s.backfillPagesLeft ?? input.backfillLeft), 0);
  planned.backfill = Math.min(input.backfillLeft, backfillPages);
  sweep(input, streams, plans, available - (planned.check + planned.webhook + planned.full - unfit));
  for (const k of ['check', 'webhook', 'full'] as const) planned[k] = Math.round(planned[k]);
  return {
    mu,
    available,
    stretch,
    exploreMinutes: explore === null ? null : explore * stretch,
    intervalMinutes: interval,
    slackHours:
      interval === null
        ? {}
        : Object.fromEntries([...slackSlots(input)].map(([r, slots]) => [r, [...slots].map((x) => x % 24).sort((a, b) => a - b)])),
    reserve,
    planned,
    streams: plans,
    warnings,
  };
}

/**
 * The spread of chance the common interval keeps back: the random count of
 * checks notifications trigger. With no stream fed by webhooks there is none
 * (polled checks at a common interval are a count known in advance), and
 * holding it back while the day's changes are still to come would space the
 * morning's checks wider than the afternoon's: 16-17 minutes before noon and
 * 14 after, on the reference day without webhooks. Kept while the model
 * knows no hours of the practice (more than HOURS_KNOWN_SHARE of the week
 * looks active, as for a new practice): there the budget spread evenly goes
 * to the night as much as to the day, and what is held back early is what
 * the day, once its changes show, is read with.
 */
function intervalChance(input: SourceInput, parts: { chance: number }): number {
  if (input.streams.some((s) => s.webhookFed && !s.backfill)) return parts.chance;
  const slots = input.activeSlots;
  if (!slots) return parts.chance;
  return hoursKnown(slots) ? 0 : parts.chance;
}

/** Whether a model's active hours (SourceInput.activeSlots) say when the practice works: at most HOURS_KNOWN_SHARE of the week. */
export function hoursKnown(slots: Uint8Array): boolean {
  return activeCount(slots) <= HOURS_KNOWN_SHARE * slots.length;
}

/**
 * The active hours of the week in a practice's active slots, kept with them: the slots are made again only when its
 * models change, and never written into.
 */
function activeCount(slots: Uint8Array): number {
  return derivedFrom(activeCountCache, slots, (x) => {
    let active = 0;
    for (const v of x) active += v;
    return active;
  });
}
const activeCountCache = new WeakMap<Uint8Array, number>();

/**
 * A model whose active hours are at most this share of the week knows the
 * practice's hours (a practice open 8-19 six days a week: 0.39). Until a
 * practice's changes show its hours (a chi-square test, rates.ts hoursShown:
 * a new practice's first pass spreads its history round the clock, or reads
 * too little to show any), every hour of the week is active (observe.ts).
 */
const HOURS_KNOWN_SHARE = 0.75;

/** The reserve's fixed part is released over the quota day's last hours. */
const RESERVE_RELEASE_HOURS = 3;

/**
 * The reserve's two parts, the spread of a random count of checks and a
 * tenth for a busier day than expected, and the share of the day's expected
 * changes still to come (the interval's reserve is released with it).
 */
function reserveParts(input: SourceInput, available: number, horizon: Horizon): { chance: number; surprise: number; byDemand: number } {
  const hoursLeft = (input.resetsAt.getTime() - input.now.getTime()) / 3_600_000;
  const byClock = Math.min(1, Math.max(0, hoursLeft) / RESERVE_RELEASE_HOURS);
  return {
    chance: Math.sqrt(available) * byClock,
    surprise: 0.1 * available * byClock,
    byDemand: Math.min(byClock, demandLeft(input, horizon)),
  };
}

/**
 * The share of the quota day's expected changes (over every incremental
 * stream, from today's rates) still to come: 1 before the practice opens, 0
 * once its expected hours are over. A reserve for a busier day than expected
 * is worth holding only while the day can still bring it; held beyond, it
 * would go to the quiet hours after closing. A rush the model did not expect
 * raises today's rates through the evidence, and with them this share.
 */
function demandLeft(input: SourceInput, horizon: Horizon): number {
  let left = 0;
  let passed = 0;
  const now = input.now.getTime();
  const dayStart = input.resetsAt.getTime() - 24 * 3_600_000;
  // The day so far as (slot, minutes) pieces, walked once for every stream: the zone's offsets cost more than the sums.
  const past = piecesOf(dayStart, now, input.timeZone);
  for (const s of input.streams) {
    if (s.kind !== 'incremental' || s.backfill) continue;
    const rates = s.rates;
    for (let i = 0; i < horizon.length; i++) left += (rates[horizon[i]![0]]! * horizon[i]![1]) / 60;
    for (let i = 0; i < past.length; i++) passed += (rates[past[i]![0]]! * past[i]![1]) / 60;
  }
  return left + passed > 0 ? left / (left + passed) : 1;
}

/**
 * The tail rule. The exchange rate alone minimises the mean staleness: it
 * checks a stream in proportion to the square root of its rate, so a stream
 * with a quarter of the busiest one's changes waits twice as long between
 * checks, and the slowest busy streams carry the day's worst waits (its 95th
 * percentile). Every polled stream is therefore also checked at least every
 * `interval` minutes in its busy hours (one change an hour or more expected,
 * and never more often than once per expected change): the least interval
 * whose plan, with the floors, exploration, safety nets and notified bounds,
 * fits the budget for the plan. A common bound is what minimises the longest
 * wait among streams that change (the minimax allocation, as a cron every N
 * minutes in opening hours gives, but only in the hours each stream is
 * expected to change); what it leaves, the exchange rate spends where it
 * buys the most. Found by bisection: the spend falls as the interval grows.
 * Null when the budget does not carry even the floors beside it, or when no
 * polled stream has busy hours left today.
 */
/** Whether a busy hour of the stream is still to come before the quota day ends. */
function busyLater(s: StreamInput, input: SourceInput, nowSlot: number): boolean {
  let busy = false;
  const rush = unforeseen(s, nowSlot);
  forEachSlotPiece(input.now.getTime(), input.resetsAt.getTime(), input.timeZone, (slot) => {
    if (slot !== nowSlot && busyHour(busyRate(s, slot, nowSlot, rush))) busy = true;
  });
  return busy;
}

/** The closing check waits at most this long into the hour for the source's lag to pass. */
const CLOSING_MAX_WAIT_MS = 30 * MINUTE;

/**
 * Whether a check started at `now` reads past the start of the current hour:
 * `now` is at least the source's lag (at most CLOSING_MAX_WAIT_MS) after it.
 * Within an hour it turns true once and stays so, as the wake's segments
 * need (src/scheduler/wake.ts).
 */
function closingReach(input: SourceInput, now: number): boolean {
  const lag = Math.min(input.lagMs ?? 0, CLOSING_MAX_WAIT_MS);
  return lag <= 0 || now - nextSlotEdge(now - 3_600_000, input.timeZone) >= lag;
}

/**
 * Expected unread changes (per request) that make the closing check worth it: about one chance in five. What the
 * closing check leaves waits all evening (the sweep reads only what is known to wait, and only with budget to spare),
 * twenty times the wait of a change left in the busy hours. At one chance in two, customers last checked at 18:55 or
 * 18:56, under half a change expected by 19:01, kept a change unread until midnight on the reference day's second
 * draw: first for a practice told its hours (bench/RESULTS.md, "After: the closing check of a practice told its
 * hours"), then, with the slack hours, for one whose hours are learned. One in five for learned hours had read the
 * held-out days' busy changes up to a minute later at the 95th percentile, the requests it takes coming from the
 * interval; with the requests the slack hours give back, 0-0.3 minutes (bench/RESULTS.md, "After: the slowest busy
 * hours are slack").
 */
const CLOSING_MIN_CHANGES = 0.2;
/** A stream gets a closing check after an hour this busy (changes an hour); slower ones wait for the sweep. */
const CLOSING_MIN_PER_HOUR = 3;
/**
 * A stream changing this often (changes an hour) in the practice's last active hour gets the closing look: every
 * other hour or more. At a change an hour or more, as first written, orders at 0.7 an hour on a new practice's second
 * day (its rate learned from one day) had no look: checked at 17:52, its changes of 17:53 and 18:16 waited for the
 * next day, while the day's last requests went to customers and memberships. Slower streams are left to their
 * exploration turns and the sweep; the look itself still waits for a fifth of a change since the last check.
 */
const CLOSING_LOOK_MIN_PER_HOUR = 0.5;
function closingLookHour(perHour: number): boolean {
  return perHour >= CLOSING_LOOK_MIN_PER_HOUR;
}

/** Busy hours a day assumed of a stream whose model knows none yet (a new practice). */
const UNKNOWN_BUSY_HOURS = 8;

/**
 * The tightest the common interval may be: the whole day's budget spread over
 * the busy hours of a usual day (from the learned models, before today's
 * evidence). However much is left, checks never come faster than that: the
 * tail is set by the widest gaps, and a budget spent on the one hour a plan
 * sees as the last busy one (a rush it did not expect, whose end nobody
 * knows) leaves the next hours without.
 */
function intervalFloor(input: SourceInput, polled: StreamInput[]): number {
  let busyHours = 0;
  for (const s of polled) busyHours += busySlots(s.modelRates ?? s.rates) / 7;
  if (busyHours === 0) busyHours = UNKNOWN_BUSY_HOURS * polled.length;
  return input.budget > 0 ? (60 * busyHours) / input.budget : Number.POSITIVE_INFINITY;
}

/** A week of rates' busy hours, kept with the rates (a model's are read again only when the model changes). */
const busySlotsCache = new WeakMap<Float64Array, number>();
function busySlots(rates: Float64Array): number {
  let n = busySlotsCache.get(rates);
  if (n === undefined) {
    n = 0;
    for (const v of rates) if (busyHour(v)) n++;
    busySlotsCache.set(rates, n);
  }
  return n;
}

function commonInterval(input: SourceInput, horizon: Horizon, streams: Bounded[], budget: number, pc: PlanCurves): number | null {
  const minor = minorStreams(input);
  const isPolled = (s: Bounded) => s.kind === 'incremental' && !s.backfill && !s.webhookFed;
  const polled = streams.filter(isPolled);
  const onInterval = polled.filter((s) => !minor.has(s.resource));
  const nowSlot = horizon.length > 0 ? horizon[0]![0] : -1;
  const rush = onInterval.map((s) => unforeseen(s, nowSlot));
  if (onInterval.length === 0 || !horizon.some(([slot]) => onInterval.some((s, k) => busyHour(busyRate(s, slot, nowSlot, rush[k])))))
    return null;
  // The other streams keep what the exchange rate would give them without the rule: streams fed by webhooks their
  // notified checks, pinned streams their fires, catalogs their floors. The interval takes what polled streams get.
  const rest = streams.filter((s) => !isPolled(s));
  const restCurves = rest.map((s) => curveOf(pc, s));
  const restSpend = (mu: number) => restCurves.reduce((n, c, i) => n + c.requests(mu, rest[i]!.interval), 0);
  // Streams whose spend does not depend on the exchange rate (catalogs on their floor) need no search for it.
  const mu = restSpend(0) === restSpend(Number.POSITIVE_INFINITY) ? 0 : findMu(input, streams, budget, pc);
  const others = pinnedSpend(input) + restSpend(mu);
  const curvesOf = polled.map((s) => curveOf(pc, s));
  const spend = (interval: number) =>
    others + curvesOf.reduce((n, c, i) => n + c.requests(Number.POSITIVE_INFINITY, minor.has(polled[i]!.resource) ? null : interval), 0);
  const lo = Math.max(1, input.settings.tickSeconds / 60, intervalFloor(input, onInterval));
  const hi = Math.max(lo, input.settings.floorHours * 60);
  const atHi = spend(hi);
  if (atHi > budget) return null;
  const atLo = spend(lo);
  if (atLo <= budget) return lo;
  return fallingRoot(spend, budget, lo, atLo, hi, atHi, INTERVAL_SEARCH);
}

/**
 * The common interval is found to 1%, and to INTERVAL_PRECISION_MINUTES where that is finer: the spend of a check
 * every x minutes is about linear in 1/x. Found to 1% alone, an interval of 84 minutes moved by up to 0.8 minutes from
 * one plan to the next as the search's brackets fell, back and forth across the ticks of a 15-second scheduler: a
 * stream due at one tick was not at the next, which the wake's search (src/scheduler/wake.ts) does not expect.
 */
export const INTERVAL_SEARCH: Search = {
  x: (interval) => 1 / interval,
  fromX: (x) => 1 / x,
  done: (lo, hi) => hi - lo <= Math.min(0.01 * lo, INTERVAL_PRECISION_MINUTES),
  past: (interval, above) => {
    const step = 0.99 * Math.min(0.01 * interval, INTERVAL_PRECISION_MINUTES);
    return above ? interval + step : interval - step;
  },
};
/** The common interval's precision in minutes, where 1% of it is coarser: a few seconds, under any scheduler's tick. */
export const INTERVAL_PRECISION_MINUTES = 0.05;
/** The last minutes of the quota day, in which budget that would be lost is spent on streams with changes expected waiting. */
export const SWEEP_MINUTES = 30;
/**
 * Expected unread changes (per request of a check) that make a stream worth a
 * check of the sweep: about a one-in-a-hundred chance of one. Budget the sweep
 * does not spend is lost at the reset, so a small chance is worth it: a slow
 * stream's last change of the afternoon, after its last check, is such a
 * chance. At one in five, then at one in twenty, such a change waited for the
 * next morning while the budget that would have read it was lost (products
 * last explored at 15:57 with 2% expected since, and 3-5 requests left at the
 * reset). A stream that has not changed for weeks (a catalog: a millionth)
 * stays below it.
 */
const SWEEP_MIN_CHANGES = 0.01;

/**
 * Budget left unspent at the reset while changes wait unread is freshness
 * thrown away: in the last SWEEP_MINUTES, what the plan will not spend buys
 * one more check of each stream expected to have changes waiting, most
 * expected first, however few (but at least SWEEP_MIN_CHANGES a request).
 * What a stream fed by webhooks has waiting is what was notified: its rates
 * say nothing its notifications did not (the safety net is for the rest), and
 * a check of it with none waiting would buy nothing.
 */
function sweep(input: SourceInput, streams: Bounded[], plans: StreamPlan[], spare: number): void {
  const now = input.now.getTime();
  const start = input.resetsAt.getTime() - SWEEP_MINUTES * MINUTE;
  if (now < start || spare <= 0) return;
  const candidates: Array<{ plan: StreamPlan; s: Bounded; expected: number }> = [];
  streams.forEach((s, i) => {
    const plan = plans[i]!;
    if (plan.due || plan.waiting || s.backfill || s.lastCheckAt === null || s.lastCheckAt.getTime() >= start) return;
    const expected = s.webhookFed
      ? s.notified.count
      : expectedSince(s.rates, input.timeZone, s.lastCheckAt.getTime(), now).changes + s.notified.count;
    if (expected >= SWEEP_MIN_CHANGES * s.cost) candidates.push({ plan, s, expected });
  });
  candidates.sort((a, b) => b.expected - a.expected);
  for (const c of candidates) {
    // The plan's checks still to come are an expectation: 0.985 requests spare means a 1.5% chance that a
    // check to come needs the last request. It is held back for them only where they are likelier to need it
    // than this check is to find a change (memberships, 7 changes expected since 12:58 on a surge day with
    // webhooks, waited for the next morning while the request was lost at the reset).
    const short = c.s.cost - spare;
    if (short > 0 && (short >= 1 || c.expected < short)) continue;
    spare -= c.s.cost;
    c.plan.due = {
      purpose: c.s.kind === 'full' ? 'full' : c.s.webhookFed && c.s.notified.count > 0 ? 'webhook' : 'check',
      reason: 'pacing',
    };
    if (c.plan.due.purpose === 'webhook' && c.s.notified.latestEvent) c.plan.due.mustInclude = c.s.notified.latestEvent;
  }
}

/** Why a full refresh due is not started (decide, holdForClosings). */
function fullWaits(cost: number, left: number): string {
  return `its full refresh (${Math.round(cost)} requests) does not fit in the ${Math.max(0, Math.floor(left))} left today: it waits for the reset`;
}

/** Why a check is held back at the end of a busy day (holdForClosings). */
export const HELD_FOR_CLOSINGS = 'the requests left are held for the closing checks';

/**
 * Whether a stream's closing check (or closing look) is still to come today: ahead in its walk,
 * or in this hour, the first after its busy hours (or the practice's active ones), and it not checked since the hour
 * began. Read from the hours alone, not from the changes expected since its last check, so it is the same at every
 * instant of an hour between two checks (the wake's segments, src/scheduler/wake.ts).
 */
function closingToCome(s: StreamInput, input: SourceInput, pc: PlanCurves): boolean {
  if (!explorable(s) || s.inFlight || s.lastCheckAt === null) return false;
  const walk = pc.walks.get(s.resource);
  if (walk && (walk.closing || walk.look)) return true;
  const now = input.now.getTime();
  if (s.lastCheckAt.getTime() >= nextSlotEdge(now - 3_600_000, input.timeZone)) return false;
  const slot = slotOf(now, input.timeZone);
  const before = slotOf(now - 3_600_000, input.timeZone);
  if (busyRate(s, before, slot) >= CLOSING_MIN_PER_HOUR && !busyHour(busyRate(s, slot, slot)) && !busyLater(s, input, slot)) return true;
  const slots = input.activeSlots;
  return !!slots && !!slots[before] && !slots[slot] && closingLookHour(busyRate(s, before, slot)) && !busyHour(busyRate(s, slot, slot));
}

/**
 * The closing checks are read whatever the budget. With the practice's evening priced as closed, a plan spends its
 * day's budget on its busy hours, and its last checks (taken as they come, each a whole request where the plan
 * counted an expectation) can leave none for the closing checks, and the busy hours' last minutes wait for midnight.
 * So a check due now that is not a closing one is held back when what would be left after it does not cover the
 * closing checks still to come (its own among them: a check at 18:50 does not spare the one at 19:01). Checks due
 * together are taken in the order the plan lists them. A full refresh due
 * is started only when all its pages (its recent passes' average, rounded) fit in what the checks due with it leave:
 * three catalogs due at 21:58 each fit alone, not together, and the last was stopped after two of its four pages.
 */
function holdForClosings(
  input: SourceInput,
  pc: PlanCurves,
  streams: Bounded[],
  plans: StreamPlan[],
  available: number,
  closingNow: ReadonlySet<string>,
): void {
  // A closing check due now is spent from what its closing needed: the sum stays the same within an hour, so a check
  // held back at one tick is not due at a later one of the same hour only for another's closing check coming due.
  // Full refreshes due together are started only as far as all their pages fit beside the checks due with them.
  // Most plans hold nothing (none due, or budget for every check due and every closing there could be): they are
  // left at once, without reading each stream's hours.
  let dueCost = 0;
  let closingsAtMost = 0;
  streams.forEach((s, i) => {
    const due = plans[i]!.due;
    if (due && (due.purpose === 'check' || due.purpose === 'full')) dueCost += s.cost;
    if (explorable(s)) closingsAtMost += s.cost;
  });
  if (dueCost === 0 || available >= dueCost + closingsAtMost + 1) return;
  const toCome = streams.map((s) => closingToCome(s, input, pc));
  let total = 0;
  let spent = 0;
  streams.forEach((s, i) => {
    if (!toCome[i]) return;
    if (closingNow.has(s.resource) && plans[i]!.due) spent += s.cost;
    else total += s.cost;
  });
  plans.forEach((p, i) => {
    const s = streams[i]!;
    if (!p.due || (toCome[i] && closingNow.has(p.resource)) || (p.due.purpose !== 'check' && p.due.purpose !== 'full')) return;
    const left = available - spent;
    if (p.due.purpose === 'full' && Math.round(s.cost) > left) {
      p.due = null;
      p.waiting = fullWaits(s.cost, left);
    } else if (total > 0 && left - s.cost < total) {
      p.due = null;
      p.waiting = HELD_FOR_CLOSINGS;
    } else spent += s.cost;
  });
}

/**
 * Requests the streams other than `but` need for their floors before the quota day resets: those not checked within
 * floorHours by then. The same at every instant between two checks.
 */
function floorsLeft(input: SourceInput, but: StreamInput): number {
  const end = input.resetsAt.getTime() - input.settings.floorHours * 3_600_000;
  let n = 0;
  for (const x of input.streams) {
    if (x.resource === but.resource || x.backfill || x.inFlight) continue;
    if ((x.lastCheckAt?.getTime() ?? Number.NEGATIVE_INFINITY) <= end) n += x.cost;
  }
  return n;
}

function decide(
  s: Bounded,
  input: SourceInput,
  mu: number,
  available: number,
  phases: ExplorePhases | null,
): { due: Due | null; waiting: string | null; closing?: true } {
  const now = input.now.getTime();
  const { settings } = input;
  const margin = settings.tickSeconds / 60;
  if (s.inFlight) return { due: null, waiting: 'running' };
  if (s.pausedUntil && s.pausedUntil.getTime() > now) return { due: null, waiting: `held until ${s.pausedUntil.toISOString()}` };
  if (s.backfill) {
    if (input.backfillLeft <= 0) return { due: null, waiting: "backfill: today's allowance is used up" };
    return { due: { purpose: 'backfill', reason: 'backfill' }, waiting: null };
  }
  if (available <= 0) return { due: null, waiting: 'the budget is used up until the quota day resets' };
  // A full refresh is started only when all its pages fit: one that runs out of budget part-way stops, and its window
  // is read again after the reset as a backfill, outside the budget, for more requests than it would have taken.
  if (s.kind === 'full' && Math.round(s.cost) > available) return { due: null, waiting: fullWaits(s.cost, available) };
  const purpose: Purpose = s.kind === 'full' ? 'full' : 'check';
  const last = s.lastCheckAt?.getTime() ?? null;
  if (last === null) return { due: { purpose, reason: 'floor' }, waiting: null };
  const sinceMinutes = (now - last) / MINUTE;

  if (s.webhookFed && s.notified.count > 0 && s.notified.oldest) {
    const oldestAge = (now - s.notified.oldest.getTime()) / MINUTE;
    const mustInclude = s.notified.latestEvent ?? undefined;
    if (oldestAge >= s.maxWait - margin) return { due: { purpose: 'webhook', reason: 'notified-max-wait', mustInclude }, waiting: null };
    if (oldestAge >= settings.debounceSeconds / 60 && s.notified.ageMinutes >= mu * s.cost)
      return { due: { purpose: 'webhook', reason: 'notified', mustInclude }, waiting: null };
  }
  if (s.webhookFed) {
    if (sinceMinutes >= settings.safetyNetMinutes - margin) return { due: { purpose, reason: 'safety-net' }, waiting: null };
  } else {
    // What its rates expect since its last check: asked by up to three rules below, walked once.
    let own: { changes: number; ageMinutes: number } | undefined;
    const ownSince = () => (own ??= expectedSince(s.rates, input.timeZone, last, now));
    const worth = (rates: Float64Array) => {
      const expected = rates === s.rates ? ownSince() : expectedSince(rates, input.timeZone, last, now);
      return expected.ageMinutes >= mu * s.cost && expected.changes >= s.cost;
    };
    if (worth(s.rates)) {
      const reason = s.forecastRates && !worth(s.forecastRates) ? 'evidence' : 'rate';
      return { due: { purpose, reason }, waiting: null };
    }
    if (woken(s)) return { due: { purpose, reason: 'evidence' }, waiting: null };
    if (s.target !== null && sinceMinutes >= s.target - margin && activeHour(s.rates[slotOf(now, input.timeZone)]!)) {
      return { due: { purpose, reason: 'max-staleness' }, waiting: null };
    }
    const slot = slotOf(now, input.timeZone);
    if (
      sinceMinutes >= intervalAt(s.interval, busyRate(s, slot, slot), s.cost, slackOf(input, s.resource).has(slot)) &&
      ownSince().changes >= s.cost
    ) {
      return { due: { purpose, reason: 'interval' }, waiting: null };
    }
    // The closing check: as a polled stream's busy hours end for the day, the changes since its last check would
    // otherwise wait for the end-of-day sweep. Once, when about one is expected, and not before it reaches the end
    // of the busy hours: a check reads up to the source's lag before it starts, so one at the hour's first tick
    // would leave the busy hours' last minute unread for the rest of the day (closingReach).
    // Whether it reached the close is asked only of a stream whose busy hours just ended (it walks the zone's hours).
    let reach: boolean | undefined;
    const reached = () => (reach ??= closingReach(input, now));
    const closing = (mustReach: boolean) =>
      explorable(s) &&
      (!busyHour(busyRate(s, slot, slot)) || afterClosing(s, input, slot, now)) &&
      busyRate(s, slotOf(now - 3_600_000, input.timeZone), slot) >= CLOSING_MIN_PER_HOUR &&
      (!mustReach || reached()) &&
      ownSince().changes >= CLOSING_MIN_CHANGES * s.cost &&
      !busyLater(s, input, slot);
    if (closing(true)) return { due: { purpose, reason: 'interval' }, waiting: null, closing: true };
    const slots = input.activeSlots;
    if (slots && slots[slot]) {
      const phase = phases?.phase.get(s.resource);
      if (
        s.explore !== null &&
        (phase !== undefined
          ? turnCame(phase, phases!.period, last, now)
          : activeMinutes(slots, input.timeZone, last, now) >= s.explore - margin)
      )
        return { due: { purpose, reason: 'exploration' }, waiting: null };
    } else if (
      slots &&
      slots[slotOf(now - 3_600_000, input.timeZone)] &&
      explorable(s) &&
      last < nextSlotEdge(now - 3_600_000, input.timeZone)
    ) {
      // The look after the active hours, in the hour after them: a stream a usual day (its model) or today (its
      // rates: a burst found on a quiet stream) would have changed since its last check is checked once (not again
      // that hour: today's rates may be a rush's), so what changed after its last exploring turn (memberships, ten
      // changes a day) or a rush that came late is read tonight (and the evidence takes it from there), not by
      // tomorrow's exploration. Not part of exploration, which a plan drops when its budget runs short in the last
      // busy hour: with it went this look, and up to ten of memberships' changes waited overnight
      // (bench/RESULTS.md, "After: the look after the active hours"). Not counted in the plan: paid from its
      // reserve, which holds until the last hours of the quota day, and for a stream active in the practice's last
      // hour held for at the end of a spent day (holdForClosings). Never from the requests the other streams'
      // daily floors still need today (floorsLeft): on a budget of 15 the looks took them. Nor for a stream whose
      // closing check is coming once the source's lag has passed: the look at the hour's first tick and the closing
      // check a minute later read the same changes but the last minute's, and the closing check alone reads them all
      // (each busy stream, every day without webhooks: three requests of the day's interval).
      // A stream active in the practice's last hour (a change every other hour or more: closingLookHour) is looked at
      // for a fifth of a change, as a busy stream's closing check is, once the source's lag has passed: orders, one or
      // two an hour as the practice closes, kept a change made at 18:56 unread until midnight.
      const usual = s.modelRates !== undefined && expectedSince(s.modelRates, input.timeZone, last, now).changes >= s.cost;
      const closingLook =
        closingLookHour(busyRate(s, slotOf(now - 3_600_000, input.timeZone), slot)) &&
        !busyHour(busyRate(s, slot, slot)) &&
        reached() &&
        ownSince().changes >= CLOSING_MIN_CHANGES * s.cost;
      // The closing look, like the closing check, is read before the catalogs' floors (which may slip past midnight):
      // a floor held a busy stream's last changes of the day until the next morning.
      if (
        (usual || closingLook || ownSince().changes >= s.cost) &&
        (closingLook || available - s.cost >= floorsLeft(input, s)) &&
        (reached() || !closing(false))
      )
        return { due: { purpose, reason: 'exploration' }, waiting: null, closing: true };
    }
  }
  if (sinceMinutes >= settings.floorHours * 60 - margin) return { due: { purpose, reason: 'floor' }, waiting: null };
  return { due: null, waiting: null };
}

/**
 * The first of `ticks` (ascending instants of one segment,
 * src/scheduler/wake.ts) at which a budget stream of `input` is due by its
 * rules alone, with the exchange rate, stretch, exploration bound and common
 * interval of `plan` and the rates of `input` held: its index, or -1 when none
 * would be. Each stream's rules are monotone in time within a segment, so its
 * first due tick is found by bisection without a whole plan. The wake takes
 * it as a guess of where the first tick that dispatches is, and checks it with
 * whole plans made there: within a segment the exchange rate and the interval
 * fall as the day goes on, so the guess is more often a tick late than early.
 */
export function earliestDue(input: SourceInput, plan: SourcePlan, ticks: readonly number[]): number {
  if (ticks.length === 0) return -1;
  let first = -1;
  const phases = explorePhases(input);
  // The input at each tick asked, made once for every stream's bisection.
  const at: SourceInput[] = [];
  const inputAt = (i: number) => (at[i] ??= { ...input, now: new Date(ticks[i]!) });
  for (const s of input.streams) {
    const b = bounded(
      s,
      input.settings,
      plan.stretch,
      plan.exploreMinutes === null ? null : plan.exploreMinutes / plan.stretch,
      minorStreams(input).has(s.resource) ? null : plan.intervalMinutes,
    );
    const dueAt = (i: number) => decide(b, inputAt(i), plan.mu, plan.available, phases).due !== null;
    const last = first >= 0 ? first - 1 : ticks.length - 1;
    if (last < 0 || !dueAt(last)) continue;
    let lo = -1;
    let hi = last;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (dueAt(mid)) hi = mid;
      else lo = mid;
    }
    first = hi;
  }
  return first;
}

/** Coarse step of the walk that estimates a stream's next check; the step that fires is then bisected to the minute. */
const NEXT_CHECK_STEP_MS = 30 * MINUTE;

export interface NextCheck {
  at: Date;
  /** Why it would be checked then: a due reason, or what it waits for (`budget`: the quota day's reset; `held`). */
  reason: DueReason | 'budget' | 'held';
}

/**
 * When the plan expects to check a budget stream next, assuming no
 * notification arrives and today's exchange rate holds: the first instant
 * from `input.now` at which the same rules that decide now (changes worth a
 * request, freshness target, safety net, floor) make it due. The floor bounds
 * the walk. Null for a stream that is running, or that the plan does not know.
 * An estimate for people (status, the status page); the scheduler decides
 * afresh at every tick.
 */
export function nextCheck(input: SourceInput, plan: SourcePlan, resource: string): NextCheck | null {
  const s = input.streams.find((x) => x.resource === resource);
  if (!s || s.inFlight) return null;
  const now = input.now.getTime();
  const streamPlan = plan.streams.find((p) => p.resource === resource);
  if (streamPlan?.due) return { at: input.now, reason: streamPlan.due.reason };
  if (s.pausedUntil && s.pausedUntil.getTime() > now) return { at: s.pausedUntil, reason: 'held' };
  if (s.backfill || plan.available <= 0) return { at: input.resetsAt, reason: 'budget' };
  const b = bounded(
    s,
    input.settings,
    plan.stretch,
    plan.exploreMinutes === null ? null : plan.exploreMinutes / plan.stretch,
    minorStreams(input).has(s.resource) ? null : plan.intervalMinutes,
  );
  const phases = explorePhases(input);
  const dueAt = (t: number) => decide(b, { ...input, now: new Date(t) }, plan.mu, plan.available, phases).due;
  const last = s.lastCheckAt?.getTime() ?? now;
  const limit = Math.max(now, last + input.settings.floorHours * 3_600_000) + NEXT_CHECK_STEP_MS;
  let before = now;
  for (let t = now + NEXT_CHECK_STEP_MS; t <= limit; t += NEXT_CHECK_STEP_MS) {
    if (!dueAt(t)) {
      before = t;
      continue;
    }
    let lo = before;
    let hi = t;
    while (hi - lo > MINUTE) {
      const mid = Math.floor((lo + hi) / 2);
      if (dueAt(mid)) hi = mid;
      else lo = mid;
    }
    return { at: new Date(hi), reason: dueAt(hi)!.reason };
  }
  return null;
}

/**
 * The longest a stream's staleness (time since every change was last read)
 * may grow now under its rules, in minutes: its freshness target (stretched
 * as today's plan stretches it) in the hours it is expected to change, the
 * safety net for a stream fed by webhooks, and the floor otherwise. For the
 * "staler than its target" alert; null for a stream still on its first pass.
 */
export function stalenessBound(s: StreamInput, settings: PlanSettings, stretch: number, now: Date, timeZone: string): number | null {
  if (s.backfill) return null;
  const floor = settings.floorHours * 60;
  if (s.webhookFed) return Math.min(floor, settings.safetyNetMinutes);
  if (s.maxStalenessMinutes !== null && activeHour(s.rates[slotOf(now.getTime(), timeZone)]!)) {
    return Math.min(floor, s.maxStalenessMinutes * stretch);
  }
  return floor;
}
