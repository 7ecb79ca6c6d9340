// Wall-clock strings in a tenant's time zone. Core timestamps carry no zone
// ("YYYY-MM-DDThh:mm:ss"), so they are rendered, and filter values parsed, in
// the tenant's zone. UTC takes a fast path; other zones cache the UTC offset
// per quarter hour, which is finer than any real zone transition.

const DAY_MS = 86_400_000;
const BUCKET_MS = 900_000;

const LOCAL_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

function two(n: number): string {
  return TWO_DIGITS[n] ?? String(n);
}

/** Calendar date of a UTC day number (days since 1970-01-01), by Hinnant's civil_from_days. */
export function dayToDate(day: number): string {
  const z = day + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const year = y >= 0 && y <= 9999 ? String(y).padStart(4, '0') : String(y);
  return `${year}-${two(m)}-${two(d)}`;
}

/** "YYYY-MM-DDThh:mm:ss" of a UTC instant. */
export function utcWall(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  const seconds = Math.floor((ms - day * DAY_MS) / 1000);
  return `${dayToDate(day)}T${two(Math.floor(seconds / 3600))}:${two(Math.floor(seconds / 60) % 60)}:${two(seconds % 60)}`;
}

export function utcDate(ms: number): string {
  return dayToDate(Math.floor(ms / DAY_MS));
}

/** A YYYY-MM-DD string naming a real calendar day, as epoch days; undefined otherwise. */
export function parseDateOnly(text: string): number | undefined {
  const m = DATE_PATTERN.exec(text);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (utcDate(ms) !== text) return undefined;
  return ms / DAY_MS;
}

export class TenantClock {
  readonly timeZone: string;
  private readonly utc: boolean;
  private readonly format: Intl.DateTimeFormat | undefined;
  private readonly offsets = new Map<number, number>();

  constructor(timeZone: string) {
    this.timeZone = timeZone;
    this.utc = timeZone.toUpperCase() === 'UTC' || timeZone === 'Etc/UTC';
    // Throws RangeError for an unknown zone, which is what we want at start-up.
    const format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    this.format = this.utc ? undefined : format;
  }

  /** Local wall time of an instant, "YYYY-MM-DDThh:mm:ss". */
  wall(ms: number): string {
    return utcWall(ms + this.offset(ms));
  }

  /** Local calendar date of an instant, "YYYY-MM-DD". */
  date(ms: number): string {
    return utcDate(ms + this.offset(ms));
  }

  /**
   * Parse a filter value: a date, or a date-time that is local to the tenant
   * unless it carries Z or an offset. A bare date is the start of that local
   * day, or its last millisecond when `endOfDay`. Undefined when unparseable.
   */
  parse(text: string, endOfDay: boolean): number | undefined {
    const m = LOCAL_PATTERN.exec(text.trim());
    if (!m) return undefined;
    const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (month < 1 || month > 12 || day < 1 || day > 31) return undefined;
    if (utcDate(Date.UTC(year, month - 1, day)) !== `${m[1]}-${m[2]}-${m[3]}`) return undefined;
    if (m[4] === undefined) {
      const start = this.fromLocal(Date.UTC(year, month - 1, day));
      return endOfDay ? this.fromLocal(Date.UTC(year, month - 1, day + 1)) - 1 : start;
    }
    const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
    if (hour > 23 || minute > 59 || second > 59) return undefined;
    const millis = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
    const wall = Date.UTC(year, month - 1, day, hour, minute, second, millis);
    const zone = m[8];
    if (zone === undefined) return this.fromLocal(wall);
    if (zone === 'Z') return wall;
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4));
    return wall - sign * offsetMinutes * 60_000;
  }

  /** The instant whose local wall time is `wallMs` (wall time written as if UTC). */
  fromLocal(wallMs: number): number {
    if (this.utc) return wallMs;
    const first = wallMs - this.offset(wallMs);
    const second = wallMs - this.offset(first);
    return second;
  }

  /** Milliseconds to add to UTC to get local wall time at instant `ms`. */
  offset(ms: number): number {
    if (this.format === undefined) return 0;
    const bucket = Math.floor(ms / BUCKET_MS);
    const cached = this.offsets.get(bucket);
    if (cached !== undefined) return cached;
    const at = bucket * BUCKET_MS;
    const parts: Record<string, number> = {};
    for (const part of this.format.formatToParts(at)) {
      if (part.type !== 'literal') parts[part.type] = Number(part.value);
    }
    const wall = Date.UTC(
      parts.year ?? 1970,
      (parts.month ?? 1) - 1,
      parts.day ?? 1,
      parts.hour ?? 0,
      parts.minute ?? 0,
      parts.second ?? 0,
    );
    const offset = wall - at;
    if (this.offsets.size > 100_000) this.offsets.clear();
    this.offsets.set(bucket, offset);
    return offset;
  }
}
