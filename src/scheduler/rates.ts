/**
 * Reading a stream's change rates from its learned model
 * (src/state/change-model.ts): changes per hour for each hour of the week.
 *
 * A slot seen for a few hours says little, so each rate is shrunk toward a
 * broader one: the stream's overall rate (toward a prior of PRIOR_PER_HOUR),
 * the hour of the day across weekdays (toward the overall rate), then the
 * hour of the week (toward its hour of the day). A Monday 10:00 slot is learned
 * from every weekday's 10:00 until Mondays have been seen.
 */
import { HALF_LIFE_DAYS, RECENT_HALF_LIFE_DAYS, SLOTS, type StoredSlot } from '../state/change-model.ts';
import { forEachSlotPiece, nextSlotEdge } from '../time.ts';
import { derivedFrom, keptWith } from './kept.ts';

/** What a stream is assumed to do before anything is seen: one change a day. */
export const PRIOR_PER_HOUR = 1 / 24;
/** Pseudo-exposure (hours) of each level's prior. */
const PRIOR_HOURS = { overall: 24, hourOfDay: 0.25, hourOfWeek: 0.25 } as const;

export function decayFactor(asOf: Date, at: Date, halfLifeDays: number = HALF_LIFE_DAYS): number {
  const days = Math.max(0, at.getTime() - asOf.getTime()) / 86_400_000;
  return 0.5 ** (days / halfLifeDays);
}

/** Changes per hour in each of the 168 slots, as of `at`. */
export function slotRates(stored: StoredSlot[], at: Date): Float64Array {
  return slotRatesWithMoved(stored, at).rates;
}

/**
 * The rates, and the slots the recent profile raised above the long memory:
 * hours the practice moved into (withRecentHours).
 */
export function slotRatesWithMoved(
  stored: StoredSlot[],
  at: Date,
  today?: number,
  decay: readonly number[] = decaysOf(stored, at, HALF_LIFE_DAYS),
): { rates: Float64Array; movedIn: Uint8Array; recent: RecentHours } {
  // The recent profile learns only from the windows pmsync reads day by day (src/state/change-model.ts,
  // windowObservation): a first pass's history would overstate its latest days.
  const movedIn = new Uint8Array(SLOTS);
  const recent = emptyRecentHours();
  return { rates: withRecentHours(longRates(stored, decay), stored, at, movedIn, today, recent), movedIn, recent };
}

/**
 * Each stored slot's decayFactor to `at`, by its index: a model's rates and its hours of the day (hourOfDay) decay its
 * slots alike, and read together (observe.ts, modelReading) they take the same factors. Slots stored at the same
 * instant (as_of) share one.
 */
export function decaysOf(stored: StoredSlot[], at: Date, halfLifeDays: number): number[] {
  const out: number[] = [];
  let asOf = Number.NaN;
  let f = Number.NaN;
  for (let i = 0; i < stored.length; i++) {
    const t = stored[i]!.asOf.getTime();
    if (t !== asOf) {
      asOf = t;
      f = decayFactor(stored[i]!.asOf, at, halfLifeDays);
    }
    out[i] = f;
  }
  return out;
}

/**
 * Working arrays of the functions below, each zeroed where it is used and never handed out: a model read again after
 * each check, and a practice's hours read from its models, made about a dozen such arrays, each one allocated outside
 * the heap (a typed array of more than 64 bytes is), several times the cost of the sums in them.
 */
const work = {
  changes: new Float64Array(SLOTS),
  exposure: new Float64Array(SLOTS),
  hourOfDay: new Float64Array(24),
  observed: new Float64Array(24),
  expected: new Float64Array(24),
  readDays: new Uint8Array(7),
};

function longRates(stored: StoredSlot[], decay: readonly number[]): Float64Array {
  const changes = work.changes.fill(0);
  const exposure = work.exposure.fill(0);
  for (let i = 0; i < stored.length; i++) {
    const s = stored[i]!;
    if (s.slot < 0 || s.slot >= SLOTS) continue;
    const f = decay[i]!;
    changes[s.slot] = changes[s.slot]! + s.changes * f;
    exposure[s.slot] = exposure[s.slot]! + s.exposureHours * f;
  }
  let totalChanges = 0;
  let totalExposure = 0;
  for (let i = 0; i < SLOTS; i++) {
    totalChanges += changes[i]!;
    totalExposure += exposure[i]!;
  }
  const overall = (totalChanges + PRIOR_HOURS.overall * PRIOR_PER_HOUR) / (totalExposure + PRIOR_HOURS.overall);
  const hourOfDay = work.hourOfDay.fill(0);
  for (let h = 0; h < 24; h++) {
    let c = 0;
    let e = 0;
    for (let d = 0; d < 7; d++) {
      c += changes[d * 24 + h]!;
      e += exposure[d * 24 + h]!;
    }
    hourOfDay[h] = (c + PRIOR_HOURS.hourOfDay * overall) / (e + PRIOR_HOURS.hourOfDay);
  }
  const rates = new Float64Array(SLOTS);
  for (let i = 0; i < SLOTS; i++)
    rates[i] = (changes[i]! + PRIOR_HOURS.hourOfWeek * hourOfDay[i % 24]!) / (exposure[i]! + PRIOR_HOURS.hourOfWeek);
  return rates;
}

/**
 * A stream's changes and exposure by hour of the day (0-23, pooled over the weekdays), decayed as the rates are;
 * `today` (the practice's weekday now) leaves that weekday out.
 */
export interface HourOfDay {
  changes: Float64Array;
  exposure: Float64Array;
}

export function hourOfDay(
  stored: StoredSlot[],
  at: Date,
  today?: number,
  decay: readonly number[] = decaysOf(stored, at, HALF_LIFE_DAYS),
): HourOfDay {
  // By slot first, then by hour in the slots' order: the same sums whatever order the rows came in.
  const bySlot = work.changes.fill(0);
  const exposureBySlot = work.exposure.fill(0);
  for (let i = 0; i < stored.length; i++) {
    const s = stored[i]!;
    if (s.slot < 0 || s.slot >= SLOTS) continue;
    // Today's own hours are today's evidence: a first morning read would show hours of its own at once.
    if (today !== undefined && Math.floor(s.slot / 24) === today) continue;
    const f = decay[i]!;
    bySlot[s.slot] = bySlot[s.slot]! + s.changes * f;
    exposureBySlot[s.slot] = exposureBySlot[s.slot]! + s.exposureHours * f;
  }
  const changes = new Float64Array(24);
  const exposure = new Float64Array(24);
  for (let i = 0; i < SLOTS; i++) {
    changes[i % 24] = changes[i % 24]! + bySlot[i]!;
    exposure[i % 24] = exposure[i % 24]! + exposureBySlot[i]!;
  }
  return { changes, exposure };
}

/** The 99th percentile of the chi-square distribution with 23 degrees of freedom (24 hours of the day less one). */
const CHI2_23_P99 = 41.64;
/** Fewer changes than this say nothing of a practice's hours, however they fall. */
const HOURS_MIN_CHANGES = 24;

/**
 * Whether a practice's changes show its hours: whether, pooled over its streams, they fall by hour of the day
 * differently from a day without hours (each stream's changes spread over the hours as its exposure is) by more than
 * chance, by a chi-square test at 1%. A new practice whose first pass read a few hundred records does not show
 * them, whatever hours its few changes happened to fall in: read as hours, that noise would call the practice
 * open at 1:00 and closed at 14:00. One whose first pass spread its history round the clock does not either.
 */
export function hoursShown(streams: readonly HourOfDay[]): boolean {
  const observed = work.observed.fill(0);
  const expected = work.expected.fill(0);
  let total = 0;
  for (const s of streams) {
    let c = 0;
    let e = 0;
    for (let h = 0; h < 24; h++) {
      c += s.changes[h]!;
      e += s.exposure[h]!;
    }
    if (!(c > 0) || !(e > 0)) continue;
    total += c;
    for (let h = 0; h < 24; h++) {
      observed[h] = observed[h]! + s.changes[h]!;
      expected[h] = expected[h]! + (c * s.exposure[h]!) / e;
    }
  }
  if (total < HOURS_MIN_CHANGES) return false;
  let x2 = 0;
  for (let h = 0; h < 24; h++) if (expected[h]! > 0) x2 += (observed[h]! - expected[h]!) ** 2 / expected[h]!;
  return x2 > CHI2_23_P99;
}

/** How far (in standard deviations of a Poisson count) the recent days must differ from the long memory to overrule it. */
const RECENT_SIGNIFICANCE = 3;
/** Pseudo-hours and pseudo-changes behind the recent profile's estimates. */
const RECENT_PRIOR_HOURS = 0.5;
const RECENT_PRIOR_CHANGES = 3;
/** The recent days add this many times what the long memory had of an hour before it counts as one moved into. */
const MOVED_IN_FACTOR = 1;
/**
 * Hours whose recent changes, pooled over the practice's streams, are under this share of what the streams' memories
 * expected of them, none of them alone beyond chance, are read as one block (withPracticeHours): a closed evening.
 */
const CLOSED_SHARE = 0.25;
/** A weekday whose usual changes are below this share of the busiest one's (of those read as it was) is closed: moved hours are not added to it. */
const OPEN_DAY_SHARE = 0.2;

/**
 * The practice's hours, learned within days. The long memory (a half-life of
 * HALF_LIFE_DAYS) needs weeks to believe that a practice now opens in the
 * evening; the recent profile (RECENT_HALF_LIFE_DAYS) knows in a few days.
 * For each hour of the day, pooled over the weekdays, the changes the recent
 * days brought (C) are set against those the long memory expected over the
 * same recent hours (M). Where they differ by more than chance (C beyond
 * M +- RECENT_SIGNIFICANCE * sqrt(M + 1)), the recent days win: an hour busier
 * than remembered gets the difference per recent hour added on the days the
 * practice opens, one quieter is scaled down by (C + 3) / (M + 3). Where they
 * agree, the long memory stands, with its finer hour-of-week detail. A
 * one-off day (a holiday) moves it for a day or two, which today's evidence
 * and activity factor correct within hours; a move that lasts is learned in
 * about three days (docs/operations.md). `today` (the practice's weekday
 * now) leaves today's own slots out: they are today's evidence.
 */
export function withRecentHours(
  rates: Float64Array,
  stored: StoredSlot[],
  at: Date,
  movedIn?: Uint8Array,
  today?: number,
  recent?: RecentHours,
): Float64Array {
  const changes = work.changes.fill(0);
  const exposure = work.exposure.fill(0);
  let any = false;
  // Slots stored at the same instant decay alike (decaysOf).
  let asOf = Number.NaN;
  let f = Number.NaN;
  const read = work.readDays.fill(0);
  for (const s of stored) {
    if (s.slot < 0 || s.slot >= SLOTS || !(s.recentExposureHours > 0)) continue;
    // Today's own hours are today's evidence's to read (rates.ts, evidenceOf): counted here as well, an hour
    // that surprised would become its own forecast at once and the evidence would see nothing beyond it.
    if (today !== undefined && Math.floor(s.slot / 24) === today) continue;
    read[Math.floor(s.slot / 24)] = 1;
    if (s.asOf.getTime() !== asOf) {
      asOf = s.asOf.getTime();
      f = decayFactor(s.asOf, at, RECENT_HALF_LIFE_DAYS);
    }
    changes[s.slot] = changes[s.slot]! + s.recentChanges * f;
    exposure[s.slot] = exposure[s.slot]! + s.recentExposureHours * f;
    any = true;
  }
  if (!any) return rates;
  const dayTotal = new Float64Array(7);
  for (let i = 0; i < SLOTS; i++) dayTotal[Math.floor(i / 24)] = dayTotal[Math.floor(i / 24)]! + rates[i]!;
  // Each weekday against the busiest of those read as it was: day by day (the recent profile) or only by a first pass.
  // A first pass holds each record's latest change alone, a day read day by day all of them: a new practice whose
  // first pass held a few records had its first day read as many times busier than every weekday its memory had only
  // from the pass, all of them then closed, and its second day (a Saturday) given none of the hours the first
  // showed: checked at 07:26 and next at 14:23, with 182 changes waiting. A weekday read and found quiet (its
  // Sunday) is closed against those read busy; once every weekday is read, against the busiest of all. Today's
  // weekday, whose hours read today are today's evidence and not yet its profile's, is open if either would call it so.
  const busiestOf = [0, 0];
  for (let d = 0; d < 7; d++) if (d !== today) busiestOf[read[d]!] = Math.max(busiestOf[read[d]!]!, dayTotal[d]!);
  const lower = Math.min(...busiestOf.filter((b) => b > 0));
  const open = Array.from(dayTotal, (t, d) => {
    const reference = d === today ? lower : busiestOf[read[d]!]!;
    return reference > 0 && Number.isFinite(reference) && t >= OPEN_DAY_SHARE * reference;
  });
  if (recent) for (let d = 0; d < 7; d++) recent.open[d] = open[d] ? 1 : 0;
  const out = Float64Array.from(rates);
  for (let h = 0; h < 24; h++) {
    let c = 0;
    let m = 0;
    let openHours = 0;
    for (let d = 0; d < 7; d++) {
      const i = d * 24 + h;
      c += changes[i]!;
      m += exposure[i]! * rates[i]!;
      if (open[d]) openHours += exposure[i]!;
    }
    const spread = RECENT_SIGNIFICANCE * Math.sqrt(m + 1);
    if (recent) {
      recent.changes[h] = c;
      recent.expected[h] = m;
      recent.openHours[h] = openHours;
      recent.own[h] = (c > m + spread && openHours > 0) || c < m - spread ? 1 : 0;
    }
    if (c > m + spread && openHours > 0) {
      const more = (c - m) / (openHours + RECENT_PRIOR_HOURS);
      for (let d = 0; d < 7; d++) {
        if (!open[d]) continue;
        // An hour the recent days at least doubled is one the practice moved into: today's activity factor, read
        // from the hours it left, does not scale it down (src/scheduler/scheduler.ts).
        if (movedIn && more > MOVED_IN_FACTOR * rates[d * 24 + h]!) movedIn[d * 24 + h] = 1;
        out[d * 24 + h] = rates[d * 24 + h]! + more;
      }
    } else if (c < m - spread) {
      const factor = (c + RECENT_PRIOR_CHANGES) / (m + RECENT_PRIOR_CHANGES);
      for (let d = 0; d < 7; d++) out[d * 24 + h] = rates[d * 24 + h]! * factor;
    }
  }
  return out;
}

/**
 * What the recent days said of each hour of the day of one stream (withRecentHours): the changes they brought (C),
 * those the long memory expected over the same hours (M), the recent exposure of the days the practice opens, and
 * whether the stream's own changes were enough to move the hour (own).
 */
export interface RecentHours {
  changes: Float64Array;
  expected: Float64Array;
  openHours: Float64Array;
  own: Uint8Array;
  /** The weekdays the practice opens (1), as the stream's long memory has them. */
  open: Uint8Array;
}

export function emptyRecentHours(): RecentHours {
  return {
    changes: new Float64Array(24),
    expected: new Float64Array(24),
    openHours: new Float64Array(24),
    own: new Uint8Array(24),
    open: new Uint8Array(7),
  };
}

/**
 * The practice's hours, read from all its streams at once. A stream's own recent changes move an hour of its rates
 * only when that hour alone differs from its long memory by more than chance (withRecentHours): a busy stream's do
 * within days, a stream of a few changes an hour never does. A new practice whose first pass spread each stream's
 * memory round the clock then learned its hours on appointments and customers and not on orders: orders stayed
 * forecast round the clock, its closed night counted against its day, and it was priced as a quiet stream all morning
 * (bench/RESULTS.md, "a new practice's next days").
 *
 * Pooled over the streams, each hour's recent changes (C) against what the streams' memories expected of it (M) say
 * the practice's hours with the power of all of them: where they differ by more than chance, the practice's ratio
 * R = (C + 3) / (M + 3) is applied to each stream whose own changes did not move that hour and are consistent with it
 * (within RECENT_SIGNIFICANCE deviations of M_s * R): a stream busy in other hours than the practice's (a nightly
 * batch) keeps its own. A busier hour adds the stream's share of the difference, M_s * (R - 1), over its recent open
 * hours, as withRecentHours adds its own; a quieter one is scaled by R. Returns the readings' rates and moved-in hours
 * as they are when no hour of the practice moved.
 *
 * The hours none of which differs by more than chance alone, but each with under CLOSED_SHARE of the changes expected,
 * are tested together as one block, and where the block differs by more than chance each of its hours takes the
 * block's ratio. A new practice's first pass spreads its memory round the clock: its evening and night each expect a
 * change or two pooled over the streams, which one empty day cannot tell from chance hour by hour. Priced open, they
 * held budget all day for an evening that never came, and the busy afternoon was read at 43-minute intervals (seed 8's
 * second day, bench/RESULTS.md, "After: a new practice's closed hours read together, and the closing checks held for").
 */
export function withPracticeHours(
  streams: ReadonlyArray<{ rates: Float64Array; movedIn: Uint8Array; recent?: RecentHours }>,
): Array<{ rates: Float64Array; movedIn: Uint8Array }> {
  const ratio = new Float64Array(24).fill(1);
  let anyMoved = false;
  // The hours each too quiet to call alone and far quieter than remembered: read together below.
  let blockChanges = 0;
  let blockExpected = 0;
  const block: number[] = [];
  for (let h = 0; h < 24; h++) {
    let c = 0;
    let m = 0;
    for (const s of streams) {
      if (!s.recent) continue;
      c += s.recent.changes[h]!;
      m += s.recent.expected[h]!;
    }
    const spread = RECENT_SIGNIFICANCE * Math.sqrt(m + 1);
    if (c > m + spread || c < m - spread) {
      ratio[h] = (c + RECENT_PRIOR_CHANGES) / (m + RECENT_PRIOR_CHANGES);
      anyMoved = true;
    } else if (m > 0 && c < CLOSED_SHARE * m) {
      block.push(h);
      blockChanges += c;
      blockExpected += m;
    }
  }
  // A practice's closed hours, read together: its evening and night each expect a few changes of a first pass that
  // spread its history round the clock, which one empty day cannot tell from chance hour by hour, but can as a block.
  if (block.length > 1 && blockChanges < blockExpected - RECENT_SIGNIFICANCE * Math.sqrt(blockExpected + 1)) {
    const R = (blockChanges + RECENT_PRIOR_CHANGES) / (blockExpected + RECENT_PRIOR_CHANGES);
    for (const h of block) ratio[h] = R;
    anyMoved = true;
  }
  if (!anyMoved) return streams.map((s) => ({ rates: s.rates, movedIn: s.movedIn }));
  return streams.map((s) => {
    const r = s.recent;
    if (!r) return { rates: s.rates, movedIn: s.movedIn };
    let rates: Float64Array | null = null;
    let movedIn: Uint8Array | null = null;
    // The stream's rate over the hours the practice moved into, read together: what each of them alone has seen of it
    // is shrunk toward it (openHourRate).
    let openChanges = 0;
    let openExposure = 0;
    for (let h = 0; h < 24; h++) {
      if (!(ratio[h]! > 1 && r.openHours[h]! > 0)) continue;
      openChanges += r.changes[h]!;
      openExposure += r.openHours[h]!;
    }
    const openRate = openExposure > 0 ? openChanges / openExposure : 0;
    for (let h = 0; h < 24; h++) {
      const R = ratio[h]!;
      if (R === 1) continue;
      const shrunk = R > 1 && r.openHours[h]! > 0 ? openHourRate(r.changes[h]!, r.openHours[h]!, openRate) : 0;
      if (r.own[h]) {
        // Its own changes moved the hour (withRecentHours): a few more than chance are not its rate in an open hour.
        for (let d = 0; d < 7 && shrunk > 0; d++) {
          const i = d * 24 + h;
          if (!r.open[d] || !(shrunk > s.rates[i]!)) continue;
          rates ??= Float64Array.from(s.rates);
          rates[i] = shrunk;
        }
        continue;
      }
      const m = r.expected[h]!;
      const implied = m * R;
      if (Math.abs(r.changes[h]! - implied) > RECENT_SIGNIFICANCE * Math.sqrt(implied + 1)) continue;
      rates ??= Float64Array.from(s.rates);
      if (R > 1) {
        if (!(r.openHours[h]! > 0)) continue;
        const byRatio = (implied - m) / (r.openHours[h]! + RECENT_PRIOR_HOURS);
        for (let d = 0; d < 7; d++) {
          if (!r.open[d]) continue;
          const i = d * 24 + h;
          const more = Math.max(byRatio, shrunk - s.rates[i]!);
          if (more > MOVED_IN_FACTOR * s.rates[i]! && !s.movedIn[i]) {
            movedIn ??= Uint8Array.from(s.movedIn);
            movedIn[i] = 1;
          }
          rates[i] = s.rates[i]! + more;
        }
      } else {
        for (let d = 0; d < 7; d++) rates[d * 24 + h] = s.rates[d * 24 + h]! * R;
      }
    }
    return { rates: rates ?? s.rates, movedIn: movedIn ?? s.movedIn };
  });
}

/** Pseudo-hours at a stream's rate over the practice's open hours behind its rate in one of them (openHourRate). */
const OPEN_HOUR_PRIOR_HOURS = 1;

/**
 * A stream's rate in one hour of the day the practice moved into, from the changes its recent days brought in that
 * hour (`changes`, over `openHours` of exposure) shrunk toward its rate over all those hours (`openRate`), which
 * weighs OPEN_HOUR_PRIOR_HOURS. A day or two of memory holds an hour or two of each: orders, about six changes an hour
 * in a practice's day, showed two in its first day's 11:00, and on its second was priced there by its share of the
 * practice's ratio applied to a first pass spread round the clock, a small fraction of a change an hour: its checks
 * stopped until 13:00, and its changes of 10:58-11:01 waited 85 minutes (bench/RESULTS.md, "After: a new practice
 * planned to its longest working day, and a stream's open hours read together"). As the days add up, an hour's own
 * changes outweigh the rest: a quiet lunch is learned.
 */
export function openHourRate(changes: number, openHours: number, openRate: number): number {
  return (changes + OPEN_HOUR_PRIOR_HOURS * openRate) / (openHours + OPEN_HOUR_PRIOR_HOURS);
}

/**
 * What a stream is expected to have built up since `from` by `to`: the
 * changes (E) and their summed age in minutes (A, the staleness a check at
 * `to` would clear).
 */
export function expectedSince(rates: Float64Array, timeZone: string, from: number, to: number): { changes: number; ageMinutes: number } {
  let changes = 0;
  let ageMinutes = 0;
  forEachSlotPiece(from, to, timeZone, (slot, a, b) => {
    const perMinute = rates[slot]! / 60;
    const minutes = (b - a) / 60_000;
    changes += perMinute * minutes;
    // ∫ λ (to - s) ds over [a, b]
    const ageA = (to - a) / 60_000;
    const ageB = (to - b) / 60_000;
    ageMinutes += (perMinute * (ageA * ageA - ageB * ageB)) / 2;
  });
  return { changes, ageMinutes };
}

/**
 * Today's evidence: what a stream's recent checks found against what its
 * forecast expected over the same windows, carried into the next hours.
 *
 * The forecast (the model, scaled by today's activity) is the prior of a
 * gamma-Poisson estimate of the rate right now: each check's window of T hours
 * with n changes moves the estimate to (n + PRIOR_HOURS * m) / (T + PRIOR_HOURS),
 * m being the rate the estimate expected over that window. Windows are taken
 * oldest first, each starting from the estimate the earlier ones left: an
 * exponentially forgetting filter in exposure time, where a ten-minute window
 * moves the estimate a little and a three-hour one almost all the way. The
 * difference from the forecast then fades with a half-life of
 * EVIDENCE_HALF_LIFE_HOURS, back to the forecast: a rush the model did not
 * expect (an evening) is planned for in the next hours, and a quiet spell the
 * model thought busy is checked less, at once, without waiting for the model
 * to learn it over days. (Kolobov et al., NeurIPS 2019, and Upadhyay et al.,
 * AAAI 2020, estimate rates online from what each check reveals; this is the
 * within-day form of it.)
 *
 * A rate above the forecast is added to it (a forecast near zero, an hour the
 * practice is normally closed, can still be corrected); one below scales it
 * down.
 */
export interface Evidence {
  /** End of the latest window: the correction fades from here. */
  at: number;
  /** The correction holds in full from this instant to `at` (when before it). */
  from?: number;
  /** Changes an hour the latest windows say, and the forecast said, for the latest window. */
  observedPerHour: number;
  forecastPerHour: number;
}

/** One completed window of a check: its instants and the rows it changed. */
export interface WindowFound {
  from: number;
  to: number;
  changes: number;
  /** The earliest modification time among the rows it changed, when their records carry one. */
  firstChangeAt?: number;
}

/** Pseudo-hours of the prior: the forecast weighs as much as an hour's window. */
export const EVIDENCE_PRIOR_HOURS = 1;
/** How fast the difference from the forecast fades back to it. */
export const EVIDENCE_HALF_LIFE_HOURS = 2;
/** Windows older than this say nothing of the next hours. */
export const EVIDENCE_LOOKBACK_HOURS = 6;
const HOUR_MS = 3_600_000;

/**
 * The rates with the evidence applied from its instant on, averaged within each slot. With `until`, only the
 * slots up to that instant are corrected (the rest keep the rates): the windows of a stream's evidence ask for no
 * more, and the correction's walk over the next day was most of what reading them cost.
 */
export function withEvidence(rates: Float64Array, timeZone: string, e: Evidence | null, until?: number): Float64Array {
  if (!e || e.observedPerHour === e.forecastPerHour) return rates;
  // Kept with the evidence (evidenceOf keeps its own): a source's probes correct the same rates by the same evidence.
  return keptWith(
    correctedCache,
    e,
    (k) => k.rates === rates && k.timeZone === timeZone && k.until === until,
    () => ({ rates, timeZone, until, out: corrected(rates, timeZone, e, until) }),
  ).out;
}
const correctedCache = new WeakMap<
  Evidence,
  Array<{ rates: Float64Array; timeZone: string; until: number | undefined; out: Float64Array }>
>();

function corrected(rates: Float64Array, timeZone: string, e: Evidence, until: number | undefined): Float64Array {
  const out = Float64Array.from(rates);
  const apply = (slot: number, w: number) => {
    const base = rates[slot]!;
    out[slot] =
      e.observedPerHour >= e.forecastPerHour
        ? base + (e.observedPerHour - e.forecastPerHour) * w
        : base * (1 - (1 - e.observedPerHour / e.forecastPerHour) * w);
  };
  // A slot's rate is one number: a slot the correction covers in part gets its mean over the slot.
  if (e.from !== undefined && e.from < e.at) {
    const covered = new Map<number, number>();
    forEachSlotPiece(e.from, e.at, timeZone, (slot, a, b) => covered.set(slot, (covered.get(slot) ?? 0) + (b - a)));
    for (const [slot, ms] of covered) apply(slot, Math.min(1, ms / HOUR_MS));
  }
  // Within a week of slots every slot of the next day is met once.
  const end = until === undefined ? e.at + 24 * HOUR_MS : Math.min(e.at + 24 * HOUR_MS, nextSlotEdge(Math.max(until, e.at), timeZone));
  const fading = fadingWeights(e.at, end, timeZone);
  for (let i = 0; i < fading.slots.length; i++) apply(fading.slots[i]!, fading.weights[i]!);
  return out;
}

/** Each slot's mean weight of a correction fading from `at`, over [at, end), in the order the slots come. */
interface Fading {
  timeZone: string;
  end: number;
  slots: number[];
  weights: number[];
}
/**
 * Weights already walked, by start (then zone and end): a source's evidence fades from the end of its latest
 * window, the same instant at every plan until its next check, while the rates it corrects change from plan to
 * plan. The walk and its powers were most of what applying the evidence cost.
 */
const fadingCache = new Map<number, Fading[]>();
/** Starts kept before the cache starts over (a fleet's windows of the last hours). */
const FADING_CACHE_MAX = 100_000;
/** When walks of evidence too old to be applied were last let go (epoch ms). */
let fadingSweptAt = Number.NEGATIVE_INFINITY;

/**
 * Lets go of the walks of evidence older than any plan at `now` applies: evidenceOf reads the windows of the last
 * EVIDENCE_LOOKBACK_HOURS, so an older start is never asked again. Each run adds a start (its window's end), and
 * kept, a replica's walks grew by tens of MB over a busy day. Done once an hour of `now`; a walk let go too soon is
 * only walked again.
 */
function forgetOldFading(now: number): void {
  // Only forward: the decider asks for instants out of order (a wake's probes up to an hour ahead, then the next
  // tick), and a sweep at each step back walked every start kept, thousands of times an hour, each walk as long as the
  // fleet is large. A step back of less than the margin the sweep keeps (an hour past the lookback) needs nothing
  // swept; a walk asked for after a sweep let it go is walked again. A clock set back by a day or more (a replay of
  // another day in the same process) sweeps at once.
  if (now < fadingSweptAt + HOUR_MS && now > fadingSweptAt - 24 * HOUR_MS) return;
  fadingSweptAt = now;
  fadingSwept++;
  const before = now - (EVIDENCE_LOOKBACK_HOURS + 1) * HOUR_MS;
  for (const at of fadingCache.keys()) if (at < before) fadingCache.delete(at);
}

/** Starts of evidence whose walks are kept (tests). */
export function fadingKept(): number {
  return fadingCache.size;
}

/** Sweeps of the walks kept so far (tests). */
let fadingSwept = 0;
export function fadingSweeps(): number {
  return fadingSwept;
}

function fadingWeights(at: number, end: number, timeZone: string): Fading {
  let list = fadingCache.get(at);
  if (list) {
    for (const f of list) if (f.end === end && f.timeZone === timeZone) return f;
  } else {
    if (fadingCache.size >= FADING_CACHE_MAX) fadingCache.clear();
    list = [];
    fadingCache.set(at, list);
  }
  const h = EVIDENCE_HALF_LIFE_HOURS * HOUR_MS;
  const f: Fading = { timeZone, end, slots: [], weights: [] };
  const { slots, weights } = f;
  forEachSlotPiece(at, end, timeZone, (slot, a, b) => {
    // Mean of 2^(-(t - at)/h) over [a, b].
    slots.push(slot);
    weights.push((h / Math.LN2 / (b - a)) * (2 ** (-(a - at) / h) - 2 ** (-(b - at) / h)));
  });
  list.push(f);
  return f;
}

/**
 * Windows oldest first, each starting where the one before it ended: checks
 * triggered by notifications overlap (each reads from its cursor, a few
 * minutes back), and the rows an earlier window read come back unchanged, so
 * the hours they share are counted once, with the earlier window.
 */
export function disjoint(windows: readonly WindowFound[]): WindowFound[] {
  const out: WindowFound[] = [];
  let end = Number.NEGATIVE_INFINITY;
  for (const w of [...windows].sort((a, b) => a.to - b.to || a.from - b.from)) {
    const from = Math.max(w.from, end);
    if (w.to > from) out.push({ ...w, from });
    end = Math.max(end, w.to);
  }
  return out;
}

/**
 * A window as two: the quiet part up to its first change, with that change,
 * and the rest, with the others. A check that reads four quiet hours and the
 * first fifteen minutes of a rush found a rush, not a busier afternoon: read
 * as one window, its changes averaged over four hours look like a forecast
 * a little low, and neither the stream's next check nor the practice's other
 * streams hear of it until the rush has run for an hour. The first change
 * goes with the quiet part (it ends it), so the rest's rate is not
 * overstated by starting the clock at one of its own changes. Only a window
 * quiet for SPLIT_MIN_QUIET_MINUTES or more before its first change is split:
 * in the short windows of a busy hour, where the first change falls is
 * chance, and splitting them only adds noise to the rates.
 */
export const SPLIT_MIN_QUIET_MINUTES = 30;
export function splitAtFirstChange(windows: readonly WindowFound[]): WindowFound[] {
  const out: WindowFound[] = [];
  for (const w of windows) {
    const f = w.firstChangeAt;
    if (f === undefined || w.changes < 2 || f - w.from < SPLIT_MIN_QUIET_MINUTES * 60_000 || f >= w.to) out.push(w);
    else out.push({ from: w.from, to: f, changes: 1 }, { from: f, to: w.to, changes: w.changes - 1 });
  }
  return out;
}

/**
 * The windows a stream's evidence reads: each hour counted once, each split at its first change. Kept with the list
 * read (a stream's windows are the same list from plan to plan until its next check; lists are never written into).
 */
function readWindows(windows: readonly WindowFound[]): WindowFound[] {
  return derivedFrom(readCache, windows, (list) => splitAtFirstChange(disjointOf(list)));
}
const readCache = new WeakMap<readonly WindowFound[], WindowFound[]>();

/** disjoint, kept with the list. */
function disjointOf(windows: readonly WindowFound[]): WindowFound[] {
  return derivedFrom(disjointCache, windows, disjoint);
}
const disjointCache = new WeakMap<readonly WindowFound[], WindowFound[]>();

/**
 * The windows of `list` (ordered by their ends, as disjoint and readWindows give them) ending in [from, to], as the
 * range [lo, hi) of its indices; null if they are not one run of the list (then the caller does not keep its result).
 */
function endingIn(list: readonly WindowFound[], from: number, to: number): { lo: number; hi: number } | null {
  let lo = -1;
  let hi = -1;
  let n = 0;
  for (let i = 0; i < list.length; i++) {
    const end = list[i]!.to;
    if (end < from || end > to) continue;
    if (lo < 0) lo = i;
    hi = i + 1;
    n++;
  }
  if (n === 0) return { lo: 0, hi: 0 };
  return n === hi - lo ? { lo, hi } : null;
}

/**
 * The evidence of a stream's recent windows (any order) against `rates`, its
 * forecast; null when none is recent enough to say anything.
 */
export function evidenceOf(rates: Float64Array, timeZone: string, windows: readonly WindowFound[], now: number): Evidence | null {
  forgetOldFading(now);
  const read = readWindows(windows);
  // The instant enters only through which windows are recent: the evidence of the same ones against the same rates is
  // kept (a source's probes ask for it at every instant between two of its checks).
  const range = endingIn(read, now - EVIDENCE_LOOKBACK_HOURS * HOUR_MS, now);
  if (!range)
    return evidenceOfRecent(
      rates,
      timeZone,
      read.filter((w) => w.to <= now && now - w.to <= EVIDENCE_LOOKBACK_HOURS * HOUR_MS),
    );
  const { lo, hi } = range;
  return keptWith(
    evidenceCache,
    rates,
    (k) => k.windows === windows && k.timeZone === timeZone && k.lo === lo && k.hi === hi,
    () => ({ windows, timeZone, lo, hi, e: evidenceOfRecent(rates, timeZone, read.slice(lo, hi)) }),
  ).e;
}
const evidenceCache = new WeakMap<
  Float64Array,
  Array<{ windows: readonly WindowFound[]; timeZone: string; lo: number; hi: number; e: Evidence | null }>
>();

/** The evidence of `recent`, windows oldest first, against `rates`. */
function evidenceOfRecent(rates: Float64Array, timeZone: string, recent: readonly WindowFound[]): Evidence | null {
  let e: Evidence | null = null;
  for (const w of recent) {
    const hours = (w.to - w.from) / HOUR_MS;
    // The changes the window's hours expect under the rates with the evidence so far (withEvidence up to its end), and
    // under the rates alone: one walk for both, each rate the one withEvidence would give its slot, without copying
    // the week of rates for the few slots the window reads.
    const prev: Evidence | null = e;
    const fading =
      prev && prev.observedPerHour !== prev.forecastPerHour
        ? fadingWeights(prev.at, Math.min(prev.at + 24 * HOUR_MS, nextSlotEdge(Math.max(w.to, prev.at), timeZone)), timeZone)
        : null;
    let priorChanges = 0;
    let forecastChanges = 0;
    forEachSlotPiece(w.from, w.to, timeZone, (slot, a, b) => {
      const minutes = (b - a) / 60_000;
      const base = rates[slot]!;
      let corrected = base;
      if (fading && prev) {
        // A slot met twice by the fading walk keeps the later weight, as withEvidence's second write does.
        const i = fading.slots.lastIndexOf(slot);
        if (i >= 0) {
          const weight = fading.weights[i]!;
          corrected =
            prev.observedPerHour >= prev.forecastPerHour
              ? base + (prev.observedPerHour - prev.forecastPerHour) * weight
              : base * (1 - (1 - prev.observedPerHour / prev.forecastPerHour) * weight);
        }
      }
      priorChanges += (corrected / 60) * minutes;
      forecastChanges += (base / 60) * minutes;
    });
    const prior: number = priorChanges / hours;
    const forecast = forecastChanges / hours;
    const observed: number = (w.changes + EVIDENCE_PRIOR_HOURS * prior) / (hours + EVIDENCE_PRIOR_HOURS);
    e = { at: w.to, observedPerHour: observed, forecastPerHour: forecast };
  }
  return e;
}

/**
 * The practice's hours move its streams together: an evening rush on its
 * appointments is an evening rush on its memberships too, though a stream
 * changing ten times a day may not have been checked since the afternoon and
 * has no evidence of its own. So the practice's intensity beyond its
 * forecast is read from what the other streams' windows of the last
 * SHARED_EVIDENCE_HOURS found, and a stream gets its usual share of it.
 *
 * Each stream's excess (changes found over the hours its recent windows
 * covered, less its forecast for them, with a prior of SHARED_PRIOR_HOURS)
 * divided by its share of the practice's usual changes is an estimate of the
 * practice-wide excess. The estimate taken is the lower median of the other
 * streams', and only when at least two say something: a rush is the practice
 * busier on most of its streams, while a burst on one stream (an import, a
 * price change) says nothing of the others and is left to that stream. Only
 * an excess is shared: a quiet spell is for each stream's own checks to show.
 */
export interface StreamWindows {
  resource: string;
  /** Its forecast rates (the model, scaled by today's activity). */
  forecast: Float64Array;
  windows: readonly WindowFound[];
  /** Changes a usual week brings it (its learned model, summed). */
  usualPerWeek: number;
}

/** How far back the other streams' windows are read for the shared excess. */
export const SHARED_EVIDENCE_HOURS = 1;
const SHARED_PRIOR_HOURS = 0.25;
/** Streams with less of the practice's usual changes than this say too little of its intensity. */
const SHARED_MIN_SHARE = 0.01;

/** Each stream's share of the practice's excess over the last hour, in changes an hour (0 when none). */
export function practiceExcess(streams: readonly StreamWindows[], timeZone: string, now: number): Map<string, number> {
  const since = now - SHARED_EVIDENCE_HOURS * HOUR_MS;
  const usual = streams.reduce((n, s) => n + s.usualPerWeek, 0);
  const out = new Map<string, number>(streams.map((s) => [s.resource, 0]));
  if (!(usual > 0)) return out;
  // The practice-wide excess each stream's windows imply.
  const implied = new Map<string, number>();
  for (const s of streams) {
    const share = s.usualPerWeek / usual;
    if (share < SHARED_MIN_SHARE) continue;
    let found = 0;
    let expected = 0;
    let hours = 0;
    for (const w of readWindows(s.windows)) {
      const from = Math.max(w.from, since);
      if (w.to <= from || w.to > now) continue;
      // A window reaching back before the hour counts its share of the hour.
      found += (w.changes * (w.to - from)) / (w.to - w.from);
      expected += expectedSince(s.forecast, timeZone, from, w.to).changes;
      hours += (w.to - from) / HOUR_MS;
    }
    if (hours > 0) implied.set(s.resource, (found - expected) / (hours + SHARED_PRIOR_HOURS) / share);
  }
  for (const s of streams) {
    const others = [...implied].filter(([r]) => r !== s.resource).map(([, x]) => x);
    if (others.length < 2) continue;
    others.sort((a, b) => a - b);
    const practice = others[Math.floor((others.length - 1) / 2)]!;
    if (practice > 0) out.set(s.resource, (practice * s.usualPerWeek) / usual);
  }
  return out;
}

/**
 * A stream's check that found far more than its forecast says the practice
 * may be doing something its model did not expect: opening on a day it has
 * never been seen open, or a rush in hours it is usually closed. The
 * practice-wide excess above is careful (two streams must agree before
 * another stream's rate is raised for hours); this is the cheap test before
 * it: every other polled stream not checked since the surprise was found is
 * checked once, and what that check finds is its own evidence. One check a
 * stream per surprise: the windows that go on finding more than forecast
 * while the rush lasts wake the others once, at the first of them.
 *
 * Surprising: at least WAKE_MIN_CHANGES changes where the forecast made that
 * many or more a one-in-WAKE_ODDS chance (a Poisson tail), so chance alone
 * wakes a practice about once in a few days of checks.
 */
export const WAKE_MIN_CHANGES = 5;
const WAKE_ODDS = 1_000_000;

/** P(X >= n) for X ~ Poisson(mean). */
export function poissonTail(n: number, mean: number): number {
  if (n <= 0) return 1;
  if (mean <= 0) return 0;
  let term = Math.exp(-mean);
  let below = 0;
  for (let k = 0; k < n; k++) {
    below += term;
    term *= mean / (k + 1);
    if (below >= 1) return 0;
  }
  return Math.max(0, 1 - below);
}

/**
 * Whether a check that found `found` changes, `changes` of them where the
 * forecast expected `expected` (all of them, or those after its first change),
 * found a surprise.
 */
export function surprising(found: number, changes: number, expected: number): boolean {
  return found >= WAKE_MIN_CHANGES && poissonTail(changes, expected) <= 1 / WAKE_ODDS;
}

/** How long a surprise stays news: a stream not checked since is woken by it. */
export const WAKE_LOOKBACK_HOURS = 3;

/**
 * The instant each stream first found a surprise in the last
 * WAKE_LOOKBACK_HOURS (the end of its earliest surprising window then).
 * The earliest, not the latest: a rush goes on finding more than the
 * forecast at every check, and one check of each other stream is the test.
 */
export function surprisesFound(streams: readonly StreamWindows[], timeZone: string, now: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of streams) {
    const list = disjointOf(s.windows);
    const range = endingIn(list, now - WAKE_LOOKBACK_HOURS * HOUR_MS, now);
    // As with evidenceOf, the instant enters only through which windows are recent.
    const at = range
      ? keptWith(
          surpriseCache,
          s.windows,
          (k) => k.forecast === s.forecast && k.timeZone === timeZone && k.lo === range.lo && k.hi === range.hi,
          () => ({ forecast: s.forecast, timeZone, ...range, at: firstSurprise(s.forecast, timeZone, list.slice(range.lo, range.hi)) }),
        ).at
      : firstSurprise(
          s.forecast,
          timeZone,
          list.filter((w) => w.to <= now && now - w.to <= WAKE_LOOKBACK_HOURS * HOUR_MS),
        );
    if (at !== null) out.set(s.resource, at);
  }
  return out;
}
const surpriseCache = new WeakMap<
  readonly WindowFound[],
  Array<{ forecast: Float64Array; timeZone: string; lo: number; hi: number; at: number | null }>
>();

/** The end of the first of `recent` (disjoint windows, oldest first) that found a surprise against `forecast`. */
function firstSurprise(forecast: Float64Array, timeZone: string, recent: readonly WindowFound[]): number | null {
  for (const w of recent) {
    // Too few changes to surprise whatever the forecast (surprising): its expectation is not walked.
    if (w.changes < WAKE_MIN_CHANGES) continue;
    // Read from its first change, when the window was split there (splitAtFirstChange): the rest is the news.
    const pieces = splitAtFirstChange([w]);
    const last = pieces[pieces.length - 1]!;
    if (surprising(w.changes, last.changes, expectedSince(forecast, timeZone, last.from, last.to).changes)) return w.to;
  }
  return null;
}

/**
 * The rates with `perHour` more over the last EVIDENCE_PRIOR_HOURS (about
 * what the others' evidence speaks for: their estimates weigh an hour of
 * windows against the forecast) and fading from `now` on, as evidence does.
 */
export function withExcess(rates: Float64Array, timeZone: string, now: number, perHour: number): Float64Array {
  if (!(perHour > 0)) return rates;
  return keptWith(
    excessCache,
    rates,
    (k) => k.timeZone === timeZone && k.now === now && k.perHour === perHour,
    () => ({
      timeZone,
      now,
      perHour,
      // corrected, not withEvidence: the evidence is made here, and kept with it nothing would be asked for again.
      out: corrected(
        rates,
        timeZone,
        { from: now - EVIDENCE_PRIOR_HOURS * HOUR_MS, at: now, observedPerHour: perHour, forecastPerHour: 0 },
        undefined,
      ),
    }),
  ).out;
}
const excessCache = new WeakMap<Float64Array, Array<{ timeZone: string; now: number; perHour: number; out: Float64Array }>>();
