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
 * due. So the first tick at which anything is due is found by bisection over
 * the ticks of the segment, each probe a whole plan (viewAt) made exactly as
 * the decider would make it at that tick: the decisions are the planner's own,
 * only the ticks at which nothing could change are skipped.
 *
 * A segment ends where an input derived from time jumps: the practice's next
 * hour (a slot of the change model: busy hours, opening hours and
 * exploration start and stop there), the quota day's end and its last
 * minutes (the sweep), a pause ending, a cron fire, a stream's notifications
 * or windows leaving the lookback the plan reads them in, and webhooks
 * expiring. The first tick of the next segment is planned in any case. The
 * sweep's minutes are one segment like the others: a stream it would check
 * has changes expected waiting, which only grow, and the budget the rest of
 * the day's plan keeps back only falls, so what it spends only grows.
 */
import type { SourceConfig } from '../config/schema.ts';
import type { ScheduleSettings } from '../config/schedules.ts';
import { nextSlotEdge } from '../time.ts';
import { earliestDue, SWEEP_MINUTES } from './budget.ts';
import { viewAt, WEBHOOK_LOOKBACK_MS, type ModelReading, type SourceReadings, type SourceView } from './observe.ts';
import type { ScheduledStream } from './plan.ts';
import { EVIDENCE_LOOKBACK_HOURS, SHARED_EVIDENCE_HOURS, WAKE_LOOKBACK_HOURS } from './rates.ts';
import { sourceTimeZone } from './plan.ts';

const HOUR_MS = 3_600_000;
/** The near span searched first (see nextWake). */
const NEAR_SPAN_MS = 10 * 60_000;

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

/** Whether a view would dispatch anything: a cron fire or a stream the plan says is due. */
export function dispatches(view: SourceView): boolean {
  return view.pausedUntil === null && (view.cronFires.length > 0 || view.plan.streams.some((s) => s.due !== null));
}

/**
 * Whether the rates of a view bound those of the rest of its segment from
 * above, as budget.ts's earliestDue needs: today's activity and evidence only
 * fall as a segment goes on, but the practice's shared excess is carried
 * forward from each instant it is read at (rates.ts, withExcess), so a stream
 * given some has higher rates ahead later in the segment than now. Nor while
 * a stream has not been read yet today: its activity is held while the
 * others' fall, and replaying days both ways showed the bound then skipping
 * the first tick that dispatches; those sources are bisected plan by plan.
 */
function boundable(view: SourceView): boolean {
  return !view.unreadToday && view.input.streams.every((s) => s.practiceExcessPerHour === undefined);
}

/** The end of the segment that starts at `now`: the first instant an input derived from time may jump. */
export function segmentEnd(w: WakeInput): number {
  const now = w.now.getTime();
  const { readings } = w;
  const candidates = [nextSlotEdge(now, sourceTimeZone(w.source))];
  const resets = readings.quota.resetsAt.getTime();
  candidates.push(resets, resets - SWEEP_MINUTES * 60_000);
  if (readings.quota.exhaustedUntil) candidates.push(readings.quota.exhaustedUntil.getTime());
  if (readings.health?.pausedUntil) candidates.push(readings.health.pausedUntil.getTime());
  for (const row of readings.rows.values()) if (row.pausedUntil) candidates.push(row.pausedUntil.getTime());
  for (const n of readings.notified.values()) {
    if (n.latestReceived) candidates.push(n.latestReceived.getTime() + WEBHOOK_LOOKBACK_MS);
    if (n.oldest) candidates.push(n.oldest.getTime() + WEBHOOK_LOOKBACK_MS);
  }
  if (readings.webhooksUntil !== null && Number.isFinite(readings.webhooksUntil)) candidates.push(readings.webhooksUntil);
  for (const list of readings.windows.values()) {
    for (const win of list) {
      candidates.push(
        win.to + SHARED_EVIDENCE_HOURS * HOUR_MS,
        win.to + WAKE_LOOKBACK_HOURS * HOUR_MS,
        win.to + EVIDENCE_LOOKBACK_HOURS * HOUR_MS,
      );
    }
  }
  let end = Number.POSITIVE_INFINITY;
  for (const c of candidates) if (c > now && c < end) end = c;
  return end;
}

/**
 * The plan made at the instant nextWake returned, when that instant is a tick
 * at which the plan dispatches: it was made there, from the same readings, so
 * a decider that plans the source at that tick with nothing changed since can
 * take it instead of making it again (viewAt is pure).
 */
export interface WokenView {
  at: number;
  view: SourceView;
}

/**
 * The instant the source should next be planned: the first tick (now plus a
 * whole number of ticks) at which its plan dispatches something, or the first
 * tick of the next segment. `nextFires` are the pinned streams' next cron
 * fires (each ends a segment too). When that instant is a tick whose plan
 * dispatches, `woken` is given the plan made there.
 */
export function nextWake(
  w: WakeInput,
  nextFires: Iterable<Date | null>,
  probes: { count: number } = { count: 0 },
  planned?: SourceView,
  woken?: (found: WokenView) => void,
): number {
  const now = w.now.getTime();
  const tick = w.settings.tickSeconds * 1000;
  let end = segmentEnd(w);
  for (const f of nextFires) if (f && f.getTime() > now && f.getTime() < end) end = f.getTime();
  // Ticks strictly inside the segment: now + k * tick for k = 1..last.
  const last = Number.isFinite(end) ? Math.ceil((end - now) / tick) - 1 : Math.ceil(HOUR_MS / tick);
  if (last < 1) return now + tick;
  // The plans that dispatch, by tick: the one at the tick returned is handed to `woken`.
  const dispatching = new Map<number, SourceView>();
  const viewOf = (k: number) => {
    probes.count++;
    const view = viewAt(w.source, w.streams, w.readings, w.models, new Date(now + k * tick), w.inFlight, w.settings);
    if (dispatches(view)) dispatching.set(k, view);
    return view;
  };
  // The first tick that dispatches lies within the first span of ticks whose last tick dispatches. The plan made
  // there bounds the span (budget.ts, earliestDue): nothing can be due before the first tick the rules alone allow
  // under it, and the first that dispatches is usually a few ticks after that: gallop from there, then bisect the
  // last step. A near span first: its bound is tighter, and a busy source's next check is usually minutes away.
  let from = 0;
  for (const to of [Math.min(last, Math.ceil(NEAR_SPAN_MS / tick)), last]) {
    if (to <= from) continue;
    const atEnd = viewOf(to);
    if (!dispatches(atEnd)) {
      from = to;
      continue;
    }
    let lo = from;
    let hi = to;
    if (planned && boundable(planned) && atEnd.cronFires.length === 0) {
      const ticks = Array.from({ length: to - from }, (_, i) => now + (from + i + 1) * tick);
      const first = earliestDue(planned.input, atEnd.plan, ticks);
      if (first >= 0) {
        lo = from + first;
        for (let step = 1; lo + step < to; step *= 2) {
          if (dispatches(viewOf(lo + step))) {
            hi = lo + step;
            break;
          }
          lo += step;
        }
      }
    }
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (dispatches(viewOf(mid))) hi = mid;
      else lo = mid;
    }
    const view = dispatching.get(hi);
    if (view && woken) woken({ at: now + hi * tick, view });
    return now + hi * tick;
  }
  return now + (last + 1) * tick;
}
