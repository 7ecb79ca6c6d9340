import { describe, expect, it } from 'vitest';
import { cronProblem, matches, nextFire, parseCron, previousFire } from '../../src/scheduler/crontab.ts';

const at = (iso: string) => new Date(iso);

describe('parseCron', () => {
  it('reads lists, ranges, steps and names', () => {
    const tab = parseCron('*/15 2,14 1-7 jan-mar mon-fri');
    expect([...tab.minute]).toEqual([0, 15, 30, 45]);
    expect([...tab.hour]).toEqual([2, 14]);
    expect([...tab.dayOfMonth]).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect([...tab.month]).toEqual([1, 2, 3]);
    expect([...tab.dayOfWeek]).toEqual([1, 2, 3, 4, 5]);
  });

  it('expands macros and treats Sunday as 0 or 7', () => {
    expect(parseCron('@daily').expression).toBe('0 0 * * *');
    expect(parseCron('@hourly').expression).toBe('0 * * * *');
    expect([...parseCron('0 0 * * 7').dayOfWeek]).toEqual([0]);
    expect([...parseCron('0 0 * * 5-7').dayOfWeek].sort()).toEqual([0, 5, 6]);
    expect([...parseCron('10/20 * * * *').minute]).toEqual([10, 30, 50]);
  });

  it('names the problem in an invalid expression', () => {
    expect(cronProblem('*/15 * * *')).toMatch(/expected 5 fields/);
    expect(cronProblem('61 * * * *')).toMatch(/minute 61 is outside 0-59/);
    expect(cronProblem('0 0 * * fri-mon')).toMatch(/runs backwards/);
    expect(cronProblem('*/0 * * * *')).toMatch(/step "0"/);
    expect(cronProblem('@often')).toMatch(/unknown macro/);
    expect(cronProblem('0 2 * * *')).toBeNull();
  });
});

describe('matches', () => {
  it('requires both day of month and day of week, as node-cron does', () => {
    const tab = parseCron('0 9 13 * fri');
    expect(matches(tab, at('2026-11-13T09:00:00Z'), 'UTC')).toBe(true); // a Friday the 13th
    expect(matches(tab, at('2026-11-20T09:00:00Z'), 'UTC')).toBe(false); // a Friday, not the 13th
  });

  it('reads the expression in the given time zone', () => {
    const tab = parseCron('0 2 * * *');
    expect(matches(tab, at('2026-11-22T01:00:00Z'), 'Europe/Berlin')).toBe(true);
    expect(matches(tab, at('2026-11-22T02:00:00Z'), 'Europe/Berlin')).toBe(false);
  });
});

describe('nextFire', () => {
  it('is strictly after the given instant', () => {
    const tab = parseCron('*/15 * * * *');
    expect(nextFire(tab, 'UTC', at('2026-11-22T08:15:00Z'))).toEqual(at('2026-11-22T08:30:00Z'));
    expect(nextFire(tab, 'UTC', at('2026-11-22T08:14:59.999Z'))).toEqual(at('2026-11-22T08:15:00Z'));
  });

  it('finds nightly fires in the source time zone across a daylight-saving change', () => {
    const tab = parseCron('0 2 * * *');
    // New York leaves daylight saving on 2026-11-01: 02:00 is UTC-4 before, UTC-5 after.
    expect(nextFire(tab, 'America/New_York', at('2026-10-30T12:00:00Z'))).toEqual(at('2026-10-31T06:00:00Z'));
    expect(nextFire(tab, 'America/New_York', at('2026-10-31T12:00:00Z'))).toEqual(at('2026-11-01T07:00:00Z'));
    expect(nextFire(tab, 'America/New_York', at('2026-11-01T12:00:00Z'))).toEqual(at('2026-11-02T07:00:00Z'));
  });

  it('skips a wall-clock time that a daylight-saving change removes', () => {
    // Berlin springs forward on 2026-03-29 from 02:00 to 03:00: 02:30 does not exist that day.
    const tab = parseCron('30 2 * * *');
    expect(nextFire(tab, 'Europe/Berlin', at('2026-03-28T12:00:00Z'))).toEqual(at('2026-03-30T00:30:00Z'));
  });

  it('returns null for an expression that never fires', () => {
    expect(nextFire(parseCron('0 0 30 2 *'), 'UTC', at('2026-01-01T00:00:00Z'))).toBeNull();
  });

  it('handles zones with half-hour offsets', () => {
    expect(nextFire(parseCron('0 2 * * *'), 'Asia/Kolkata', at('2026-11-22T00:00:00Z'))).toEqual(at('2026-11-22T20:30:00Z'));
  });
});

describe('previousFire', () => {
  it('includes the given instant', () => {
    const tab = parseCron('*/15 * * * *');
    expect(previousFire(tab, 'UTC', at('2026-11-22T08:15:00Z'))).toEqual(at('2026-11-22T08:15:00Z'));
    expect(previousFire(tab, 'UTC', at('2026-11-22T08:14:59Z'))).toEqual(at('2026-11-22T08:00:00Z'));
  });

  it('walks back over days, months and weekdays', () => {
    expect(previousFire(parseCron('0 2 * * *'), 'UTC', at('2026-11-22T01:59:00Z'))).toEqual(at('2026-11-21T02:00:00Z'));
    expect(previousFire(parseCron('0 0 1 1 *'), 'UTC', at('2026-11-22T08:00:00Z'))).toEqual(at('2026-01-01T00:00:00Z'));
    expect(previousFire(parseCron('45 23 * * sun'), 'UTC', at('2026-11-22T08:00:00Z'))).toEqual(at('2026-11-15T23:45:00Z'));
  });

  it('agrees with nextFire on every fire of a busy expression over a week', () => {
    const tab = parseCron('5,35 */3 * * mon-fri');
    let t = at('2026-11-16T00:00:00Z');
    for (let i = 0; i < 60; i++) {
      const next = nextFire(tab, 'Europe/Berlin', t)!;
      expect(previousFire(tab, 'Europe/Berlin', new Date(next.getTime() + 59_000))).toEqual(next);
      expect(previousFire(tab, 'Europe/Berlin', new Date(next.getTime() - 1))!.getTime()).toBeLessThan(next.getTime());
      t = next;
    }
  });
});
