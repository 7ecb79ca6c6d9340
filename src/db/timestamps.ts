/**
 * timestamptz values as the driver returns them, read faster.
 *
 * pg parses each timestamptz with postgres-date: a regular expression over
 * the text, then a second one for the zone. The scheduler reads tens of
 * thousands of them a tick on a large fleet (runs' windows, stream
 * schedules, checkpoints), and that parsing was a tenth of a busy tick's
 * CPU. PostgreSQL writes a timestamptz in a session whose TimeZone is UTC as
 * `YYYY-MM-DD HH:MM:SS[.ffffff]+00`; that form is read here by its
 * characters, with the same arithmetic postgres-date does (Date.UTC of the
 * fields, the fraction as 1000 * parseFloat of it, so it truncates to the
 * millisecond alike). Anything else (another session zone, years before
 * 1000, BC, infinity) goes to postgres-date unchanged.
 */
import pg from 'pg';

const TIMESTAMPTZ = pg.types.builtins.TIMESTAMPTZ;
const slowParse = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date | number | null;

/** The digit at `i` of `s`, or -1 when it is not a digit. */
function digit(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/** Two digits at `i` as a number, or -1. */
function two(s: string, i: number): number {
  const a = digit(s, i);
  const b = digit(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

/** A timestamptz's text as pg's own parser reads it: a Date (or what postgres-date gives for the forms it is left). */
export function parseTimestamptz(text: string): Date | number | null {
  const n = text.length;
  // 'YYYY-MM-DD HH:MM:SS+00' is 22 characters; a fraction adds '.' and digits before the zone.
  if (
    n < 22 ||
    text.charCodeAt(n - 3) !== 43 /* + */ ||
    text.charCodeAt(n - 2) !== 48 ||
    text.charCodeAt(n - 1) !== 48 ||
    text.charCodeAt(4) !== 45 /* - */ ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 /* space */ ||
    text.charCodeAt(13) !== 58 /* : */ ||
    text.charCodeAt(16) !== 58
  )
    return slowParse(text);
  const century = two(text, 0);
  const yy = two(text, 2);
  const month = two(text, 5);
  const day = two(text, 8);
  const hour = two(text, 11);
  const minute = two(text, 14);
  const second = two(text, 17);
  // Years below 1000 (postgres-date sets years 0-99 apart) and anything not all digits are left to it.
  if (century < 10 || yy < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return slowParse(text);
  let ms = 0;
  if (n > 22) {
    if (text.charCodeAt(19) !== 46 /* . */ || n === 23) return slowParse(text);
    for (let i = 20; i < n - 3; i++) if (digit(text, i) < 0) return slowParse(text);
    ms = 1000 * parseFloat(text.slice(19, n - 3));
  }
  return new Date(Date.UTC(century * 100 + yy, month - 1, day, hour, minute, second, ms));
}

/** Makes every pg client of the process read timestamptz with parseTimestamptz. */
export function useFastTimestamps(): void {
  pg.types.setTypeParser(TIMESTAMPTZ, parseTimestamptz);
}
