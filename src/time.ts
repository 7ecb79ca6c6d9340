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

const offsetFormats = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();

/** Milliseconds to add to UTC for wall-clock time in `timeZone` at `ms` (zones move in whole quarter hours). */
export function zoneOffsetMs(ms: number, timeZone: string): number {
  if (timeZone === 'UTC' || timeZone === 'Etc/UTC') return 0;
  const bucket = Math.floor(ms / QUARTER_MS);
  const key = `${timeZone}\u0000${bucket}`;
  const cached = offsets.get(key);
  if (cached !== undefined) return cached;
  let f = offsetFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    offsetFormats.set(timeZone, f);
  }
  const at = bucket * QUARTER_MS;
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const offset = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!) - at;
  if (offsets.size > 50_000) offsets.clear();
  offsets.set(key, offset);
  return offset;
}

/** Hour-of-week slot (weekday * 24 + hour, Sunday = 0) of an instant in a zone. */
export function slotOf(ms: number, timeZone: string): number {
  const localHour = Math.floor((ms + zoneOffsetMs(ms, timeZone)) / HOUR_MS);
  const weekday = (((Math.floor(localHour / 24) + EPOCH_WEEKDAY) % 7) + 7) % 7;
  return weekday * 24 + (((localHour % 24) + 24) % 24);
}

/**
 * Walks [from, to) in pieces that each lie within one slot, calling
 * visit(slot, startMs, endMs). Pieces are quarter hours (every zone's offset
 * is a whole number of them), merged while the slot stays the same.
 */
export function forEachSlotPiece(
  from: number,
  to: number,
  timeZone: string,
  visit: (slot: number, start: number, end: number) => void,
): void {
  let start = from;
  let slot = -1;
  let pieceStart = from;
  while (start < to) {
    const end = Math.min(to, (Math.floor(start / QUARTER_MS) + 1) * QUARTER_MS);
    const s = slotOf(start, timeZone);
    if (s !== slot) {
      if (slot >= 0) visit(slot, pieceStart, start);
      slot = s;
      pieceStart = start;
    }
    start = end;
  }
  if (slot >= 0 && pieceStart < to) visit(slot, pieceStart, to);
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
