/**
 * Cron expressions: the one evaluator pmsync uses to validate the
 * configuration, to decide when a pinned stream fires, to find a fire missed
 * while no process was up, and to show the next fire. It is cron-parser, driven
 * by the scheduler's own clock (no wall-clock timers), so a test or benchmark
 * can play a whole day in seconds.
 *
 * Five fields: minute hour day-of-month month day-of-week, each `*`, a number,
 * a range `a-b`, a step `*\/n` or `a-b/n`, or a comma list; month and day names
 * (jan, mon) are accepted, Sunday is 0 or 7. Macros: @hourly, @daily,
 * @weekly, @monthly, @yearly (= @annually), @weekdays, @weekends.
 *
 * As in classic cron, when both day-of-month and day-of-week are restricted a
 * day matching EITHER fires (`0 9 13 * fri`: every Friday and every 13th).
 * Times are wall-clock times in the schedule's time zone: a time a
 * daylight-saving change skips fires once at the first instant after the gap,
 * and a time it repeats fires once.
 */
import { CronExpressionParser, type CronExpression } from 'cron-parser';

export class CronSyntaxError extends Error {
  constructor(expression: string, detail: string) {
    super(`"${expression}" is not a valid cron expression: ${detail}`);
    this.name = 'CronSyntaxError';
  }
}

const MACROS = new Set(['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually', '@weekdays', '@weekends']);

function parse(expression: string, timeZone: string, from: Date): CronExpression {
  const text = expression.trim();
  if (text.startsWith('@')) {
    if (!MACROS.has(text.toLowerCase())) throw new CronSyntaxError(expression, `unknown macro (known: ${[...MACROS].join(', ')})`);
  } else {
    const fields = text.split(/\s+/).length;
    if (fields !== 5)
      throw new CronSyntaxError(expression, `expected 5 fields (minute hour day-of-month month day-of-week), found ${fields}`);
  }
  try {
    return CronExpressionParser.parse(text.toLowerCase() === '@midnight' ? '@daily' : text, { tz: timeZone, currentDate: from });
  } catch (err) {
    throw new CronSyntaxError(expression, (err as Error).message);
  }
}

/** The problem with an expression, or null when it is valid. */
export function cronProblem(expression: string): string | null {
  try {
    parse(expression, 'UTC', new Date(0));
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The five-field form of a valid expression (macros expanded), for logs and status. */
export function normalizeCron(expression: string): string {
  return parse(expression, 'UTC', new Date(0)).stringify(false);
}

/** The first fire strictly after `after`, or null when there is none. */
export function nextFire(expression: string, timeZone: string, after: Date): Date | null {
  const cron = parse(expression, timeZone, after);
  return cron.hasNext() ? cron.next().toDate() : null;
}

/** The last fire at or before `atOrBefore`, or null when there is none. */
export function previousFire(expression: string, timeZone: string, atOrBefore: Date): Date | null {
  // cron-parser's prev() is strictly earlier than its start, at second precision.
  const cron = parse(expression, timeZone, new Date(Math.floor(atOrBefore.getTime() / 1000) * 1000 + 1000));
  return cron.hasPrev() ? cron.prev().toDate() : null;
}

/** Fires in (after, until], oldest first, at most `limit` of them. */
export function firesBetween(expression: string, timeZone: string, after: Date, until: Date, limit = 1000): Date[] {
  const cron = parse(expression, timeZone, after);
  const out: Date[] = [];
  while (out.length < limit && cron.hasNext()) {
    const d = cron.next().toDate();
    if (d.getTime() > until.getTime()) break;
    out.push(d);
  }
  return out;
}
