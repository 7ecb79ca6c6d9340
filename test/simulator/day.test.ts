/**
 * Practice days the simulator plays, and the held-out days the scheduling
 * benchmark scores on them: when their changes fall, how unread changes count,
 * and what the baselines are predicted to spend.
 */
import { describe, expect, it } from 'vitest';
import { CANDIDATES, cronOf, hoursCron, plainCron, predict, rigOptions } from '../../bench/support/baselines.ts';
import { DAY, HOUR, localMidnight, MINUTE, type TrackedChange } from '../../bench/support/day-rig.ts';
import { FALL_BACK_DATE, HELD_OUT_DAYS, ordinaryHistory, scoredChanges, stalenessWithUnread, ZONE } from '../../bench/support/held-out.ts';
import { schedulesSchema } from '../../src/config/schedules.ts';
import { burstDay, EVENING_DAY, planDay, planLayers, REFERENCE_DAY, scaledDay } from '../../simulator/day.ts';
import { TenantClock } from '../../simulator/time.ts';

const DATE = '2027-11-18';
const localHour = (ms: number) =>
  Number(new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, hour: '2-digit', hourCycle: 'h23' }).format(ms));

describe('days unlike the reference one', () => {
  it('plays the evening rush between 18:00 and 21:00 with the reference day’s changes', () => {
    const changes = planDay(EVENING_DAY, DATE, ZONE, 7);
    expect(changes).toHaveLength(planDay(REFERENCE_DAY, DATE, ZONE, 7).length);
    expect(Math.min(...changes.map((c) => localHour(c.at)))).toBe(18);
    expect(Math.max(...changes.map((c) => localHour(c.at)))).toBe(20);
  });

  it('scales every resource’s changes and new records', () => {
    const five = scaledDay(REFERENCE_DAY, 5);
    expect(five.changes.appointments).toEqual({ total: 1500, created: 200 });
    expect(five.changes.products).toEqual({ total: 5, created: 0 });
    expect(five.shape).toEqual(REFERENCE_DAY.shape);
  });

  it('layers a burst on a usual day: both sets of changes, in time order, the burst within its hour', () => {
    const changes = planLayers([REFERENCE_DAY, burstDay('products', 30, 14)], DATE, ZONE, 7);
    const products = changes.filter((c) => c.resource === 'products');
    expect(products).toHaveLength(31);
    expect(products.filter((c) => localHour(c.at) === 14).length).toBeGreaterThanOrEqual(30);
    expect(changes.filter((c) => c.resource === 'appointments')).toHaveLength(300);
    expect(changes.map((c) => c.at)).toEqual([...changes.map((c) => c.at)].sort((a, b) => a - b));
    // One layer is the day planDay gives: the reference day's changes stay those of bench/schedule.ts.
    expect(planLayers([REFERENCE_DAY], DATE, ZONE, 7)).toEqual(planDay(REFERENCE_DAY, DATE, ZONE, 7));
  });
});

describe('held-out days', () => {
  it('keeps the history apart from the scored day: 28 days before it, Sundays closed unless open daily', () => {
    const history = ordinaryHistory(DATE);
    expect(history).toHaveLength(28);
    expect(history.filter((d) => d === null)).toHaveLength(4);
    expect(ordinaryHistory(FALL_BACK_DATE, true).every((d) => d === REFERENCE_DAY)).toBe(true);
    const keys = HELD_OUT_DAYS.map((d) => d.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(HELD_OUT_DAYS.find((d) => d.key === 'new-practice')!.history).toBe('none');
    const evening = HELD_OUT_DAYS.find((d) => d.key === 'evening')!;
    expect(evening.history).not.toContain(EVENING_DAY);
  });

  it('scores the fall-back day over 25 hours, its changes at the usual local hours', () => {
    const start = localMidnight(FALL_BACK_DATE, ZONE);
    const end = localMidnight(new TenantClock(ZONE).date(start + DAY + 2 * HOUR), ZONE);
    expect(end - start).toBe(25 * HOUR);
    const day = HELD_OUT_DAYS.find((d) => d.key === 'dst')!;
    const changes = scoredChanges(day, 7);
    expect(changes.every((c) => localHour(c.at) >= 8 && localHour(c.at) < 19)).toBe(true);
  });

  it('counts a change never read as stale until the end of the day, and counts it', () => {
    const t0 = Date.UTC(2027, 10, 18, 14);
    const end = t0 + 10 * HOUR;
    const change = (at: number, visibleAt: number | null): TrackedChange => ({
      resource: 'appointments',
      id: String(at),
      at,
      modified: '',
      visibleAt,
    });
    const changes = [
      ...Array.from({ length: 18 }, (_, i) => change(t0 + i * MINUTE, t0 + i * MINUTE + 5 * MINUTE)),
      change(t0, null),
      change(end - 60 * MINUTE, null),
    ];
    const s = stalenessWithUnread(changes, end, () => true);
    expect(s).toMatchObject({ changes: 20, unread: 2, p50: 5, max: 600 });
    expect(s.p95).toBe(60);
  });
});

describe('baselines', () => {
  it('pins busy streams in opening hours, up to closing time, and the rest nightly', () => {
    expect(hoursCron(15)).toBe('*/15 8-19 * * *');
    expect(hoursCron(180)).toBe('0 10,13,16,19 * * *');
    expect(plainCron(30)).toBe('*/30 * * * *');
    expect(plainCron(240)).toBe('0 */4 * * *');
    expect(cronOf({ kind: 'hours-cron', every: 15 }, 'appointments')).toBe('*/15 8-19 * * *');
    expect(cronOf({ kind: 'hours-cron', every: 15 }, 'products')).toBe('0 2 * * *');
  });

  it('configures every setting as a valid schedules section', () => {
    for (const [kind, settings] of Object.entries(CANDIDATES) as Array<[keyof typeof CANDIDATES, number[]]>) {
      for (const every of settings) {
        const parsed = schedulesSchema.safeParse(rigOptions({ kind, every }).schedules);
        expect(parsed.success, `${kind} ${every}: ${parsed.error?.message}`).toBe(true);
      }
    }
  });

  it('predicts a plain cron at a page per check and per 100 changes read, plus the nightly full refreshes', () => {
    const from = localMidnight(DATE, ZONE);
    const to = from + DAY;
    // 7 incremental streams, 24 checks each; companies, gift certificates (320: 4 pages) and programs nightly.
    expect(predict({ kind: 'cron', every: 60 }, [], from, to, MINUTE)).toBe(7 * 24 + 6);
    const burst = Array.from({ length: 250 }, (_, i) => ({
      at: from + 10 * HOUR + i * 1000,
      resource: 'appointments' as const,
      created: false,
    }));
    expect(predict({ kind: 'cron', every: 60 }, burst, from, to, MINUTE)).toBe(7 * 24 + 6 + 2);
    // Nightly everywhere and a check 5 minutes after the burst's first notification: 7 + 6 + 1 (3 pages).
    expect(predict({ kind: 'cron+webhooks', every: 5 }, burst, from, to, MINUTE)).toBe(7 + 6 + 3);
  });
});
