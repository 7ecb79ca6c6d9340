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

export function quotaDayOf(now: Date, rule: QuotaDayRule): QuotaDay {
  const shifted = new Date(now.getTime() - rule.resetHour * 3_600_000);
  const day = dateInZone(shifted, rule.timeZone);
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  const startsAt = zonedToUtc(y, m, d, rule.resetHour, rule.timeZone);
  const next = new Date(Date.UTC(y, m - 1, d + 1));
  const resetsAt = zonedToUtc(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), rule.resetHour, rule.timeZone);
  return { day, startsAt, resetsAt };
}
