/**
 * When a source's plan can next dispatch: the decider plans a source again
 * only then, or when something it was planned from changes (a run ends, a
 * notification arrives, its health or configuration changes: the scheduler
 * hears of those through src/state/source-changes.ts). A quiet source costs
 * nothing in between.
 *
 * With its inputs fixed, a source's plan changes with time alone, and in one
 * direction within a *segment*: staleness and expected changes only grow, and
 * the exchange rate, the stretch of the bounds and the common interval only
 * fall as the day's budget is left for fewer hours (budget.ts). A stream that
 * is not due at a tick and is due at a later one of the same segment stays
 * due. So the plan made at a segment's last tick says whether any of its
 * ticks dispatches, and the first that does is found by a search over the
 * segment's ticks, each probe a whole plan (viewAt) made exactly as the
 * decider would make it at that tick: the decisions are the planner's own,
 * only the ticks at which nothing could change are skipped.
 *
 * A segment ends where an input derived from time jumps: the practice's next
 * hour (a slot of the change model: busy hours, opening hours and
 * exploration start and stop there), a stated opening (hours.ts), the quota day's end and its last
 * minutes (the sweep), a pause ending, a cron fire, a stream's notifications
 * or windows leaving the lookback the plan reads them in (a window that
 * found too few changes to be a surprise has no surprise to let go of; one
 * read as two leaves the evidence's lookback in two steps; the practice's
 * shared excess is read as of the source's reading, not at each instant:
 * observe.ts, sharedExcess), the source's hourly reading, and webhooks
 * expiring. A segment none of whose ticks dispatches costs one plan (at its
 * last tick); the search resumes at the next segment's first tick when the
 * clock gets there, unless an input changed before (the source is then
 * planned afresh), so a search is never carried past what may change. The
 * sweep's minutes are one segment like the others: a stream it would check
 * has changes expected waiting, which only grow, and the budget the rest of
 * the day's plan keeps back only falls, so what it spends only grows.
 */
import type { SourceConfig } from '../config/schema.ts';
import type { ScheduleSettings } from '../config/schedules.ts';
import { nextSlotEdge } from '../time.ts';
import { earliestDue, SWEEP_MINUTES } from './budget.ts';
import { nextOpening, statedHours } from './hours.ts';
import { REREAD_MS, viewAt, WEBHOOK_LOOKBACK_MS, type ModelReading, type SourceReadings, type SourceView } from './observe.ts';
import type { ScheduledStream } from './plan.ts';
import { EVIDENCE_LOOKBACK_HOURS, WAKE_LOOKBACK_HOURS, WAKE_MIN_CHANGES } from './rates.ts';
import { sourceTimeZone } from './plan.ts';

const HOUR_MS = 3_600_000;

export interface WakeInput {
  source: SourceConfig;
  streams: ScheduledStream[];
  readings: SourceReadings;
  models: Map<string, ModelReading>;
  inFlight: Set<string>;
  settings: ScheduleSettings;
  /** The tick just planned, at which nothing was due. */
  now: Date;
}

/**
 * What a guess is made from: a plan's exchange rate, stretch, exploration bound and common interval, and the input
 * whose streams' rules are walked under them (the plan's own, or, for a source read again since, its input now).
 */
export type GuessBase = Pick<SourceView, 'input' | 'plan'>;

/** Whether a view would dispatch anything: a cron fire or a stream the plan says is due. */
export function dispatches(view: SourceView): boolean {
  return view.pausedUntil === null && (view.cronFires.length > 0 || view.plan.streams.some((s) => s.due !== null));
}

/**
 * The end of the first segment that holds an instant after `after` (itself
 * after `now`): the first instant after it at which an input derived from
 * time may jump, or `until` if none comes before.
 */
export function segmentEnd(w: WakeInput, after: number, until: number): number {
  const { readings } = w;
  let end = until;
  const consider = (c: number) => {
    if (c > after && c < end) end = c;
  };
  consider(nextSlotEdge(after, sourceTimeZone(w.source)));
  // A practice planned by its stated hours reads its rates from its checks from its stated opening on (observe.ts),
  // which need not fall on an hour.
  const stated = statedHours(w.source);
  const opening = stated && nextOpening(stated, after, sourceTimeZone(w.source));
  if (opening) consider(opening);
  // The decider reads the source again here (observe.ts, REREAD_MS), and what the plan reads of its practice's excess
  // with it.
  consider(readings.at.getTime() + REREAD_MS);
  const resets = readings.quota.resetsAt.getTime();
  consider(resets);
  consider(resets - SWEEP_MINUTES * 60_000);
  if (readings.quota.exhaustedUntil) consider(readings.quota.exhaustedUntil.getTime());
  if (readings.health?.pausedUntil) consider(readings.health.pausedUntil.getTime());
  for (const row of readings.rows.values()) if (row.pausedUntil) consider(row.pausedUntil.getTime());
  for (const n of readings.notified.values()) {
    if (n.latestReceived) consider(n.latestReceived.getTime() + WEBHOOK_LOOKBACK_MS);
    if (n.oldest) consider(n.oldest.getTime() + WEBHOOK_LOOKBACK_MS);
  }
  if (readings.webhooksUntil !== null && Number.isFinite(readings.webhooksUntil)) consider(readings.webhooksUntil);
  for (const list of readings.windows.values()) {
    for (const win of list) {
      consider(win.to + EVIDENCE_LOOKBACK_HOURS * HOUR_MS);
      // Evidence reads a window quiet for long before its first change as two, the first ending at that change
      // (rates.ts, splitAtFirstChange): that part leaves the lookback first.
      if (win.firstChangeAt !== undefined && win.firstChangeAt > win.from && win.firstChangeAt < win.to)
        consider(win.firstChangeAt + EVIDENCE_LOOKBACK_HOURS * HOUR_MS);
      // Only a window that found WAKE_MIN_CHANGES or more can be a surprise (rates.ts, surprising).
      if (win.changes >= WAKE_MIN_CHANGES) consider(win.to + WAKE_LOOKBACK_HOURS * HOUR_MS);
    }
  }
  return end;
}

/**
 * What the search knows at the instant nextWake returned. Either the plan
 * made there, when that instant is a tick at which the plan dispatches: it
 * was made from the same readings, so a decider that plans the source at that
 * tick with nothing changed since can take it instead of making it again
 * (viewAt is pure). Or, when that instant starts a segment no plan was made
 * in, the plan made at the last tick before it (which did not dispatch):
 * with nothing changed since, the decider resumes the search there
 * (`resume`) instead of planning at that tick first.
 */
export type WokenView = { at: number; view: SourceView } | { at: number; resume: SourceView };

/**
 * The instant the source should next be planned: the first tick (now plus a
 * whole number of ticks) at which its plan dispatches something, or the
 * first tick of the next segment when none of this one's does. `nextFires`
 * are the pinned streams' next cron fires (each ends a segment too).
 * `woken` is told what the search knows there (WokenView).
 *
 * Within a segment the plans only grow more ready to dispatch, so its last
 * tick says whether any of its ticks dispatches: one plan for a segment that
 * does not. An input read up to each instant breaks this: today's activity
 * where webhooks are registered was, and fell between reads, so a stream's
 * busy hour could end within a segment; it is read up to the source's last
 * reading (observe.ts, forecastOf), as the practice's excess is
 * (bench/RESULTS.md, "Today's activity read up to the source's last reading
 * where webhooks are registered"). In one that does, the first tick that dispatches is looked for
 * from a guess (the rules alone under `base`, the last plan made before the
 * segment), galloping out from it and bisecting the last step. Every tick is
 * decided by a whole plan made there, as the decider would make it; the
 * search only skips ticks at which nothing can change. `base` is the plan
 * made at `now`; with `resumed`, the segment searched starts at `now` itself,
 * and `base` is the plan made at the last tick of the segment before (the
 * search a wake with `resume` handed over), or, for a source read again
 * since it was last planned, its input at `now` under that plan's exchange
 * rate and interval (GuessBase): only the guess, and so the ticks probed,
 * depend on `base`.
 */
export function nextWake(
  w: WakeInput,
  nextFires: Iterable<Date | null>,
  probes: { count: number } = { count: 0 },
  base?: GuessBase,
  woken?: (found: WokenView) => void,
  resumed = false,
): number {
  const now = w.now.getTime();
  const tick = w.settings.tickSeconds * 1000;
  let until = now + HOUR_MS;
  for (const f of nextFires) if (f && f.getTime() > now && f.getTime() < until) until = f.getTime();
  const plans = new Map<number, SourceView>();
  const viewOf = (k: number) => {
    let view = plans.get(k);
    if (view) return view;
    probes.count++;
    view = viewAt(w.source, w.streams, w.readings, w.models, new Date(now + k * tick), w.inFlight, w.settings);
    plans.set(k, view);
    return view;
  };
  const at = (k: number) => dispatches(viewOf(k));
  const found = (k: number) => {
    woken?.({ at: now + k * tick, view: viewOf(k) });
    return now + k * tick;
  };
  // Tick k is now + k * tick, and a segment holds the ticks before its end from its start on. `from` is the last
  // tick known not to dispatch: now, or, resumed, the tick before it.
  const from = resumed ? -1 : 0;
  // The segment searched is the one that holds the first tick after `from`: a segment ending before it holds none.
  const to = Math.ceil((segmentEnd(w, now + (from + 1) * tick, until) - now) / tick) - 1;
  const g = base ? guess(base, from, to, now, tick) : -1;
  // A guess made again from the plan at tick k, for the ticks (lo, hi]; `fallback` when the rules alone make nothing
  // due there under it.
  const again = (k: number, lo: number, hi: number, fallback: number) => {
    const next = guess(viewOf(k), lo, hi, now, tick);
    return next > lo ? next : fallback;
  };
  if (g > from) {
    // The guess is more often a tick late than early (the exchange rate and the interval fall as the day goes on,
    // and the guess holds them): the tick before it is tried first, which settles both cases with two plans. When
    // that tick dispatches already, or the guess's own tick does not, the search starts from a guess made again
    // from the plan just made, whose exchange rate and interval are those of later in the segment, rather than
    // galloping from the first guess (a guess d ticks late cost about 2 log2(d) plans).
    if (g - 1 > from && at(g - 1)) return found(firstIn(from, g - 1, again(g - 1, from, g - 2, g - 1), at));
    if (at(g)) return found(g);
    if (g < to && at(to)) return found(firstIn(g, to, again(g, g, to, g + 1), at));
  } else if (at(to)) return found(firstIn(from, to, to, at));
  // None of this segment's ticks dispatches: the search resumes at the next one's first tick, when it comes.
  woken?.({ at: now + (to + 1) * tick, resume: viewOf(to) });
  return now + (to + 1) * tick;
}

/**
 * Where in the ticks (from, to] of one segment the first that dispatches is
 * likely to be: the first at which a stream's rules alone make it due
 * (budget.ts, earliestDue) under `base`, a plan made before them that did
 * not dispatch (its exchange rate, bounds and rates held), or -1 when none
 * would be. A guess: the search tries it first and checks it with whole plans.
 */
function guess(base: GuessBase, from: number, to: number, now: number, tick: number): number {
  const ticks = Array.from({ length: to - from }, (_, i) => now + (from + i + 1) * tick);
  const first = earliestDue(base.input, base.plan, ticks);
  return first < 0 ? -1 : from + 1 + first;
}

/**
 * The first of the ticks (lo, hi] at which `at` holds, given that it holds at
 * `hi`, not at `lo`, and from some tick on between them: tried at `g` first,
 * then galloping away from it (by 1, 2, 4 ... ticks), then bisecting the last
 * step.
 */
function firstIn(lo: number, hi: number, g: number, at: (k: number) => boolean): number {
  if (at(g)) {
    hi = g;
    for (let step = 1; hi - step > lo; step *= 2) {
      if (!at(hi - step)) {
        lo = hi - step;
        break;
      }
      hi -= step;
    }
  } else {
    lo = g;
    for (let step = 1; lo + step < hi; step *= 2) {
      if (at(lo + step)) {
        hi = lo + step;
        break;
      }
      lo += step;
    }
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (at(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}
