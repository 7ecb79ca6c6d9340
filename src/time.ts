/**
 * Time-zone helpers every part of pmsync uses: wall-clock formatting in an
 * IANA zone, zone offsets, hour-of-week slots. Pure functions, no clock reads.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** `YYYY-MM-DDThh:mm:ss` wall-clock time in the given IANA time zone. */
export function formatInZone(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
}

/** `YYYY-MM-DD` in the given time zone. */
export function dateInZone(date: Date, timeZone: string): string {
  return formatInZone(date, timeZone).slice(0, 10);
}

/** Rounds down to the second, since filter values carry no fractions. */
export function floorToSecond(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

const HOUR_MS = 3_600_000;
const QUARTER_MS = 900_000;
/** 1970-01-01 was a Thursday. */
const EPOCH_WEEKDAY = 4;

const DAY_MS = 86_400_000;
const QUARTERS_PER_DAY = DAY_MS / QUARTER_MS;

/**
 * Per zone: its formatter, the offsets of the quarter hours already asked for (bucket -> ms), and per UTC day
 * already asked for its offset when it holds the whole day (NaN when it changes within it: asked by quarter then).
 */
interface ZoneOffsets {
  format: Intl.DateTimeFormat;
  byQuarter: Map<number, number>;
  byDay: Map<number, number>;
  /** The day asked for last, and its entry in byDay: most questions in a row are of the same day. */
  lastDay: number;
  lastDayOffset: number;
}
const zones = new Map<string, ZoneOffsets>();
/** Quarter hours remembered per zone before its cache starts over (about five years of them). */
const MAX_QUARTERS_PER_ZONE = 200_000;
/** Days remembered per zone before its cache starts over. */
const MAX_DAYS_PER_ZONE = 2_000;

/** The zone asked for last: a plan asks of one zone many times in a row. */
let lastZone: { name: string; zone: ZoneOffsets } | null = null;

function zoneOf(timeZone: string): ZoneOffsets {
  if (lastZone !== null && lastZone.name === timeZone) return lastZone.zone;
  let zone = zones.get(timeZone);
  if (!zone) {
    zone = {
      format: new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
      }),
      byQuarter: new Map(),
      byDay: new Map(),
      lastDay: Number.NaN,
      lastDayOffset: Number.NaN,
    };
    zones.set(timeZone, zone);
  }
  lastZone = { name: timeZone, zone };
  return zone;
}

/** The offset of one quarter hour, from the zone's formatter once, then from its cache. */
function quarterOffset(zone: ZoneOffsets, bucket: number): number {
  const cached = zone.byQuarter.get(bucket);
  if (cached !== undefined) return cached;
  const at = bucket * QUARTER_MS;
  const p: Record<string, number> = {};
  for (const part of zone.format.formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const offset = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!) - at;
  if (zone.byQuarter.size > MAX_QUARTERS_PER_ZONE) zone.byQuarter.clear();
  zone.byQuarter.set(bucket, offset);
  return offset;
}

/** The offset that holds for every quarter hour of a UTC day, or NaN when it changes within the day. */
function dayOffset(zone: ZoneOffsets, day: number): number {
  if (day === zone.lastDay) return zone.lastDayOffset;
  let offset = zone.byDay.get(day);
  if (offset === undefined) {
    // Every quarter of the day asked once: the day's offset is the one they all have, if they do.
    const first = day * QUARTERS_PER_DAY;
    offset = quarterOffset(zone, first);
    for (let q = 1; q < QUARTERS_PER_DAY; q++) {
      if (quarterOffset(zone, first + q) !== offset) {
        offset = Number.NaN;
        break;
      }
    }
    if (zone.byDay.size > MAX_DAYS_PER_ZONE) zone.byDay.clear();
    zone.byDay.set(day, offset);
  }
  zone.lastDay = day;
  zone.lastDayOffset = offset;
  return offset;
}

/**
 * Milliseconds to add to UTC for wall-clock time in `timeZone` at `ms` (zones move in whole quarter hours).
 * The scheduler asks this for every hour of every plan it makes, so each zone's answers are kept: by UTC day
 * when the offset holds all day (most days), by quarter hour on a day it changes.
 */
export function zoneOffsetMs(ms: number, timeZone: string): number {
  if (timeZone === 'UTC' || timeZone === 'Etc/UTC') return 0;
  const zone = zoneOf(timeZone);
  const offset = dayOffset(zone, Math.floor(ms / DAY_MS));
  return Number.isNaN(offset) ? quarterOffset(zone, Math.floor(ms / QUARTER_MS)) : offset;
}

/** Hour-of-week slot (weekday * 24 + hour, Sunday = 0) of an instant in a zone. */
export function slotOf(ms: number, timeZone: string): number {
  return slotOfLocalHour(Math.floor((ms + zoneOffsetMs(ms, timeZone)) / HOUR_MS));
}

/** The slot of a local hour counted from the epoch (whole hours of wall-clock time). */
function slotOfLocalHour(localHour: number): number {
  const day = Math.floor(localHour / 24);
  let weekday = (day + EPOCH_WEEKDAY) % 7;
  if (weekday < 0) weekday += 7;
  return weekday * 24 + (localHour - day * 24);
}

/**
 * Walks [from, to) in pieces that each lie within one slot, calling
 * visit(slot, startMs, endMs), consecutive pieces of the same slot merged.
 * A piece runs to the next local hour while the zone's offset holds; an hour
 * in which it changes (every zone's offsets move in whole quarter hours) is
 * walked a quarter hour at a time. The scheduler walks the rest of the day
 * this way for every stream of every plan.
 */
export function forEachSlotPiece(
  from: number,
  to: number,
  timeZone: string,
  visit: (slot: number, start: number, end: number) => void,
): void {
  let slot = -1;
  let pieceStart = from;
  let start = from;
  while (start < to) {
    const offset = zoneOffsetMs(start, timeZone);
    const localHour = Math.floor((start + offset) / HOUR_MS);
    const hourEnd = (localHour + 1) * HOUR_MS - offset;
    if (zoneOffsetMs(hourEnd - 1, timeZone) === offset) {
      // The slot of `start`, from the offset just read (slotOf would read it again).
      const s = slotOfLocalHour(localHour);
      if (s !== slot) {
        if (slot >= 0) visit(slot, pieceStart, start);
        slot = s;
        pieceStart = start;
      }
      start = Math.min(to, hourEnd);
      continue;
    }
    // The offset changes within this hour: a quarter hour at a time until it ends.
    const stop = Math.min(to, hourEnd);
    while (start < stop) {
      const end = Math.min(stop, (Math.floor(start / QUARTER_MS) + 1) * QUARTER_MS);
      const s = slotOf(start, timeZone);
      if (s !== slot) {
        if (slot >= 0) visit(slot, pieceStart, start);
        slot = s;
        pieceStart = start;
      }
      start = end;
    }
  }
  if (slot >= 0 && pieceStart < to) visit(slot, pieceStart, to);
}

/** The first instant after `ms` at which the hour-of-week slot in `timeZone` changes. */
export function nextSlotEdge(ms: number, timeZone: string): number {
  const slot = slotOf(ms, timeZone);
  let t = (Math.floor(ms / QUARTER_MS) + 1) * QUARTER_MS;
  while (slotOf(t, timeZone) === slot) t += QUARTER_MS;
  return t;
}

/** Hour-of-week slot of a wall-clock time "YYYY-MM-DDThh:mm[:ss]" (already in the zone it was written in). */
export function wallSlot(wall: string): number {
  const ms = Date.UTC(Number(wall.slice(0, 4)), Number(wall.slice(5, 7)) - 1, Number(wall.slice(8, 10)), Number(wall.slice(11, 13) || 0));
  const d = new Date(ms);
  return d.getUTCDay() * 24 + d.getUTCHours();
}

/** The instant at which the wall clock in `timeZone` shows `wall` ("YYYY-MM-DDThh:mm[:ss[.fff]]"); the earlier of two in a repeated hour. */
export function wallToInstant(wall: string, timeZone: string): Date {
  const target = Date.parse(`${wall.length === 16 ? `${wall}:00` : wall}Z`);
  let guess = target - zoneOffsetMs(target, timeZone);
  guess = target - zoneOffsetMs(guess, timeZone);
  return new Date(guess);
}

/** The instant at which the wall clock in `timeZone` shows y-m-d h:00:00. */
export function zonedToUtc(y: number, m: number, d: number, h: number, timeZone: string): Date {
  const target = Date.UTC(y, m - 1, d, h);
  let guess = target;
  for (let i = 0; i < 3; i++) {
    const shown = Date.parse(`${formatInZone(new Date(guess), timeZone)}Z`);
    guess += target - shown;
  }
  return new Date(guess);
}

/** The instant of the local midnight that began the day of `ms` in `timeZone`, worked out through Intl. */
function dayStartOf(ms: number, timeZone: string): number {
  const [y, m, d] = dateInZone(new Date(ms), timeZone).split('-').map(Number) as [number, number, number];
  return zonedToUtc(y, m, d, 0, timeZone).getTime();
}

/**
 * Each zone's latest local day, [start, next midnight): the scheduler asks for the day of the same few instants at
 * every source it reads, and each answer through Intl's formatting cost about as much as reading the source.
 */
const lastDay = new Map<string, { start: number; end: number }>();

/** The instant of the local midnight that began the day of `ms` in `timeZone`. */
export function localDayStart(ms: number, timeZone: string): number {
  const day = lastDay.get(timeZone);
  if (day && ms >= day.start && ms < day.end) return day.start;
  const start = dayStartOf(ms, timeZone);
  // Noon of the next day is a day ahead whatever the zone's offsets do (a day is 23 to 25 hours).
  lastDay.set(timeZone, { start, end: dayStartOf(start + 36 * 3_600_000, timeZone) });
  return start;
}

/** The instant of the next local midnight after `ms` in `timeZone`. */
export function nextLocalMidnight(ms: number, timeZone: string): number {
  // Leaves the day of `ms` as the zone's latest.
  localDayStart(ms, timeZone);
  return lastDay.get(timeZone)!.end;
}
