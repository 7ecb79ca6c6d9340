/**
 * Cron expressions, parsed and evaluated as pure functions (no timers, no
 * clock reads): the scheduler uses them to validate the configuration, to find
 * the fire a process missed while it was down, and to show the next fire.
 *
 * Five fields: minute hour day-of-month month day-of-week, each `*`, a number,
 * a range `a-b`, a step `*\/n` or `a-b/n`, or a comma list of those; month and
 * day names (jan, mon) are accepted, Sunday is 0 or 7. Macros: @hourly,
 * @daily (= @midnight), @weekly, @monthly, @yearly (= @annually).
 *
 * Day-of-month and day-of-week must BOTH match, as node-cron (which fires the
 * timers) evaluates them; classic Vixie cron ORs them when both are restricted.
 * Times are wall-clock times in the schedule's time zone: a time skipped by a
 * daylight-saving change never fires, a repeated one fires at each occurrence.
 */

export interface Crontab {
  /** The five-field form (macros expanded), as handed to node-cron. */
  expression: string;
  minute: ReadonlySet<number>;
  hour: ReadonlySet<number>;
  dayOfMonth: ReadonlySet<number>;
  month: ReadonlySet<number>;
  /** 0 = Sunday ... 6 = Saturday. */
  dayOfWeek: ReadonlySet<number>;
}

export class CronSyntaxError extends Error {
  constructor(expression: string, detail: string) {
    super(`"${expression}" is not a valid cron expression: ${detail}`);
    this.name = 'CronSyntaxError';
  }
}

const MACROS: Record<string, string> = {
  '@hourly': '0 * * * *',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@weekly': '0 0 * * 0',
  '@monthly': '0 0 1 * *',
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
};

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Offset of names[0] (months start at 1). */
  nameBase?: number;
}

const FIELDS: FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, nameBase: 1 },
  { name: 'day of week', min: 0, max: 7, names: DAYS, nameBase: 0 },
];

function parseValue(text: string, spec: FieldSpec, expression: string): number {
  const lower = text.toLowerCase();
  const named = spec.names?.indexOf(lower) ?? -1;
  if (named >= 0) return named + (spec.nameBase ?? 0);
  if (!/^\d+$/.test(text)) throw new CronSyntaxError(expression, `${spec.name} "${text}" is not a number`);
  const n = Number(text);
  if (n < spec.min || n > spec.max) throw new CronSyntaxError(expression, `${spec.name} ${n} is outside ${spec.min}-${spec.max}`);
  return n;
}

function parseField(text: string, spec: FieldSpec, expression: string): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined || range === undefined || range === '')
      throw new CronSyntaxError(expression, `${spec.name} "${part}" is malformed`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1)
        throw new CronSyntaxError(expression, `${spec.name} step "${stepText}" must be a positive number`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.name === 'day of week' ? 6 : spec.max;
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (a === undefined || b === undefined || more !== undefined)
        throw new CronSyntaxError(expression, `${spec.name} range "${range}" is malformed`);
      from = parseValue(a, spec, expression);
      to = parseValue(b, spec, expression);
      if (from > to) throw new CronSyntaxError(expression, `${spec.name} range "${range}" runs backwards`);
    } else {
      from = parseValue(range, spec, expression);
      to = stepText === undefined ? from : spec.max;
    }
    for (let v = from; v <= to; v += step) out.add(spec.name === 'day of week' && v === 7 ? 0 : v);
  }
  return out;
}

export function parseCron(input: string): Crontab {
  const trimmed = input.trim();
  const expanded = MACROS[trimmed.toLowerCase()] ?? trimmed;
  if (expanded.startsWith('@')) throw new CronSyntaxError(input, `unknown macro (known: ${Object.keys(MACROS).join(', ')})`);
  const fields = expanded.split(/\s+/);
  if (fields.length !== 5)
    throw new CronSyntaxError(input, `expected 5 fields (minute hour day-of-month month day-of-week), found ${fields.length}`);
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields.map((f, i) => parseField(f, FIELDS[i]!, input)) as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  return { expression: fields.join(' '), minute, hour, dayOfMonth, month, dayOfWeek };
}

/** The problem with an expression, or null when it is valid. */
export function cronProblem(expression: string): string | null {
  try {
    parseCron(expression);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Wall-clock fields of an instant in a time zone. */
export interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  /** 0 = Sunday. */
  weekday: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

export function localTime(instant: Date, timeZone: string): LocalTime {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'short',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(instant)) p[part.type] = part.value;
  return {
    year: Number(p.year),
    month: Number(p.month),
    day: Number(p.day),
    hour: Number(p.hour),
    minute: Number(p.minute),
    weekday: DAYS.indexOf(String(p.weekday).toLowerCase().slice(0, 3)),
  };
}

function dayMatches(tab: Crontab, t: LocalTime): boolean {
  return tab.month.has(t.month) && tab.dayOfMonth.has(t.day) && tab.dayOfWeek.has(t.weekday);
}

export function matches(tab: Crontab, instant: Date, timeZone: string): boolean {
  const t = localTime(instant, timeZone);
  return dayMatches(tab, t) && tab.hour.has(t.hour) && tab.minute.has(t.minute);
}

const MINUTE = 60_000;
/** How far back a missed fire is looked for, and ahead for the next one. */
export const SEARCH_LIMIT_MS = 400 * 24 * 60 * MINUTE;

function floorToMinute(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}

/**
 * The first fire strictly after `after`, or null when none falls within the
 * search limit (e.g. "0 0 30 2 *"). Whole non-matching days and hours are
 * skipped; jumps stay an hour short of a day so a daylight-saving change can
 * never carry the walk past a matching minute.
 */
export function nextFire(tab: Crontab, timeZone: string, after: Date): Date | null {
  const limit = after.getTime() + SEARCH_LIMIT_MS;
  let ms = floorToMinute(after.getTime()) + MINUTE;
  while (ms <= limit) {
    const t = localTime(new Date(ms), timeZone);
    if (!dayMatches(tab, t)) ms += Math.max(60 - t.minute, 24 * 60 - (t.hour * 60 + t.minute) - 60) * MINUTE;
    else if (!tab.hour.has(t.hour)) ms += (60 - t.minute) * MINUTE;
    else if (!tab.minute.has(t.minute)) ms += MINUTE;
    else return new Date(ms);
  }
  return null;
}

/** The last fire at or before `atOrBefore`, or null when none falls within the search limit. */
export function previousFire(tab: Crontab, timeZone: string, atOrBefore: Date): Date | null {
  const limit = atOrBefore.getTime() - SEARCH_LIMIT_MS;
  let ms = floorToMinute(atOrBefore.getTime());
  while (ms >= limit) {
    const t = localTime(new Date(ms), timeZone);
    if (!dayMatches(tab, t)) ms -= Math.max(t.minute + 1, t.hour * 60 + t.minute + 1 - 60) * MINUTE;
    else if (!tab.hour.has(t.hour)) ms -= (t.minute + 1) * MINUTE;
    else if (!tab.minute.has(t.minute)) ms -= MINUTE;
    else return new Date(ms);
  }
  return null;
}
