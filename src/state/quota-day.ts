/**
 * The quota day: the period a gateway key's daily budget covers. The spec does
 * not say when it resets; pmsync assumes midnight UTC and lets the operator set
 * the time zone and hour.
 */
import { dateInZone, zonedToUtc } from '../time.ts';

export interface QuotaDayRule {
  timeZone: string;
  resetHour: number;
}

export interface QuotaDay {
  /** YYYY-MM-DD label of the quota day. */
  day: string;
  startsAt: Date;
  resetsAt: Date;
}

/**
 * The last answer for each rule: a scheduler's tick asks it of every key it
 * reads again, at the one instant of the tick, and keys mostly share a rule.
 * The zone's calendar is read through Intl, which was a tenth of a busy
 * tick's reads.
 */
const lastAnswer = new Map<string, { at: number; day: QuotaDay }>();
/** Rules remembered before the memory starts over (a fleet's zones and reset hours). */
const MAX_RULES = 1_000;

export function quotaDayOf(now: Date, rule: QuotaDayRule): QuotaDay {
  const key = `${rule.resetHour} ${rule.timeZone}`;
  const at = now.getTime();
  let last = lastAnswer.get(key);
  if (last?.at !== at) {
    if (lastAnswer.size >= MAX_RULES) lastAnswer.clear();
    last = { at, day: computeQuotaDay(now, rule) };
    lastAnswer.set(key, last);
  }
  const { day, startsAt, resetsAt } = last.day;
  return { day, startsAt: new Date(startsAt), resetsAt: new Date(resetsAt) };
}

const DAY_MS = 86_400_000;

/**
 * The day whose reset instants hold `now`: the local date first, then the day
 * before when its reset hour has not come yet. Subtracting the reset hour from
 * `now` instead turned the day an hour late or early on the days the clocks
 * move (at 04:00 or 02:00 for a reset at 03:00).
 */
function computeQuotaDay(now: Date, rule: QuotaDayRule): QuotaDay {
  const startOf = (dayMs: number) => {
    const d = new Date(dayMs);
    return zonedToUtc(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), rule.resetHour, rule.timeZone);
  };
  const [y, m, d] = dateInZone(now, rule.timeZone).split('-').map(Number) as [number, number, number];
  let day = Date.UTC(y, m - 1, d);
  let startsAt = startOf(day);
  if (now < startsAt) {
    day -= DAY_MS;
    startsAt = startOf(day);
  }
  return { day: new Date(day).toISOString().slice(0, 10), startsAt, resetsAt: startOf(day + DAY_MS) };
}
