/**
 * The quota day: the period a gateway key's daily budget covers. The spec does
 * not say when it resets; pmsync assumes midnight UTC and lets the operator set
 * the time zone and hour.
 */
import { dateInZone, formatInZone } from '../sync/window.ts';

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

export function quotaDayOf(now: Date, rule: QuotaDayRule): QuotaDay {
  const shifted = new Date(now.getTime() - rule.resetHour * 3_600_000);
  const day = dateInZone(shifted, rule.timeZone);
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  const startsAt = zonedToUtc(y, m, d, rule.resetHour, rule.timeZone);
  const next = new Date(Date.UTC(y, m - 1, d + 1));
  const resetsAt = zonedToUtc(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), rule.resetHour, rule.timeZone);
  return { day, startsAt, resetsAt };
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
