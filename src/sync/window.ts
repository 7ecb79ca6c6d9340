/**
 * Window arithmetic for incremental streams. Pure functions, no clock reads.
 */

export interface WindowBounds {
  /** Null on the first pass: read everything modified up to `end`. */
  start: Date | null;
  end: Date;
}

/**
 * The next window: from the stored cursor minus the overlap, to the run start
 * minus the safety lag. Null when there is nothing to read: the cursor is
 * beyond the end (e.g. set in the future). A cursor exactly at the end still
 * re-reads the overlap, which catches records committed late.
 */
export function nextWindow(cursor: Date | null, runStart: Date, overlapSeconds: number, lagSeconds: number): WindowBounds | null {
  const end = new Date(runStart.getTime() - lagSeconds * 1000);
  if (cursor === null) return { start: null, end };
  if (cursor.getTime() > end.getTime()) return null;
  return { start: new Date(cursor.getTime() - overlapSeconds * 1000), end };
}

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
