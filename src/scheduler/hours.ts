/**
 * A practice's opening hours as its operator states them (a source's
 * `hours`, e.g. `["Mon-Fri 08:00-19:00", "Sat 09:00-13:00"]`, in the source's
 * time zone). The scheduler learns a practice's hours from its changes
 * (rates.ts, hoursShown); until they show (a new practice, whose first pass
 * spreads its history round the clock), the stated hours stand for them
 * (observe.ts, viewAt): each stream's model is read with its week spread over
 * them, the practice is explored and planned in them as one whose hours are
 * known, and without webhooks its day is read from its checks from its
 * stated opening on, with a look at its streams just after it. Once its own
 * changes show its hours, those are used. Hours stated wrong cost the first
 * day (docs/operations.md).
 */
import { parseHours, type StatedHours } from '../config/hours.ts';
import { localDayStart, nextLocalMidnight, slotOf, zoneOffsetMs } from '../time.ts';

export type { StatedHours };

const statedCache = new WeakMap<readonly string[], StatedHours | null>();

/** A source's stated hours, parsed once per configuration; null when none are stated (or they hold no hour). */
export function statedHours(source: object): StatedHours | null {
  const entries = 'hours' in source && Array.isArray(source.hours) ? (source.hours as readonly string[]) : null;
  if (!entries || entries.length === 0) return null;
  let h = statedCache.get(entries);
  if (h === undefined) {
    const { hours, problems } = parseHours(entries);
    h = problems.length === 0 && hours.open > 0 ? hours : null;
    statedCache.set(entries, h);
  }
  return h;
}

const spreadCache = new WeakMap<Float64Array, WeakMap<StatedHours, Float64Array>>();

/**
 * A stream's model rates with the changes of its week spread evenly over the
 * stated hours instead: what a model that had learned them at the volume its
 * first pass read would say. Cached per model and hours (a plan reads it at
 * every evaluation).
 */
export function spreadOverHours(rates: Float64Array, hours: StatedHours): Float64Array {
  let byHours = spreadCache.get(rates);
  if (!byHours) spreadCache.set(rates, (byHours = new WeakMap()));
  let out = byHours.get(hours);
  if (out) return out;
  let week = 0;
  for (const r of rates) week += r;
  const perHour = week / hours.open;
  out = new Float64Array(rates.length);
  for (let i = 0; i < rates.length; i++) out[i] = hours.slots[i] ? perHour : 0;
  byHours.set(hours, out);
  return out;
}

/**
 * Minutes after a stated opening at which each polled stream of a practice
 * planned by its stated hours, without webhooks, is checked once (observe.ts,
 * viewAt): a new practice's model, read from a first pass of a few hundred
 * records, may price its day too low for any check before its exploration
 * bound (four hours), and a look at the opening itself finds nothing yet. Ten
 * minutes give a busy stream a few changes to show (the first check then
 * reads its rate), and its first changes wait about one check interval of a
 * busy day.
 */
export const OPENING_LOOK_MINUTES = 10;

/**
 * The instant of the earliest stated opening of the local day of `ms`, plus `afterMinutes`; null when closed that
 * day. From the zone's local midnight and offsets, both kept per zone (time.ts): a plan asks this at every
 * evaluation, and Intl's formatting would cost more than the rest of it.
 */
export function openingOn(hours: StatedHours, ms: number, timeZone: string, afterMinutes = 0): number | null {
  return openingFrom(hours, localDayStart(ms, timeZone), timeZone, afterMinutes);
}

/** openingOn for the day that begins at `dayStart`, a local midnight. */
function openingFrom(hours: StatedHours, dayStart: number, timeZone: string, afterMinutes = 0): number | null {
  const opens = hours.opens[Math.floor(slotOf(dayStart, timeZone) / 24)]!;
  if (opens < 0) return null;
  // Minutes of wall-clock time after midnight, less what the zone's offset moved since (a daylight-saving change).
  const wall = dayStart + (opens + afterMinutes) * 60_000;
  return wall - (zoneOffsetMs(wall, timeZone) - zoneOffsetMs(dayStart, timeZone));
}

/** The instant of the opening look of the local day of `ms` (OPENING_LOOK_MINUTES after its opening); null when closed. */
export function openingLookOn(hours: StatedHours, ms: number, timeZone: string): number | null {
  return openingOn(hours, ms, timeZone, OPENING_LOOK_MINUTES);
}

/** The first stated opening after `after`, within the next eight days; null when none (no day open). */
export function nextOpening(hours: StatedHours, after: number, timeZone: string): number | null {
  let dayStart = localDayStart(after, timeZone);
  for (let day = 0; day <= 8; day++) {
    const at = openingFrom(hours, dayStart, timeZone);
    if (at !== null && at > after) return at;
    dayStart = nextLocalMidnight(dayStart, timeZone);
  }
  return null;
}
