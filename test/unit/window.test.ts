import { describe, expect, it } from 'vitest';
import { nextWindow } from '../../src/sync/window.ts';
import { formatInZone, floorToSecond, dateInZone } from '../../src/time.ts';
import { quotaDayOf } from '../../src/state/quota-day.ts';

describe('nextWindow', () => {
  const runStart = new Date('2026-05-10T12:00:00Z');

  it('reads everything up to the lagged run start on the first pass', () => {
    expect(nextWindow(null, runStart, 600, 60)).toEqual({ start: null, end: new Date('2026-05-10T11:59:00Z') });
  });

  it('starts the overlap before the cursor', () => {
    const w = nextWindow(new Date('2026-05-10T11:00:00Z'), runStart, 600, 60);
    expect(w).toEqual({ start: new Date('2026-05-10T10:50:00Z'), end: new Date('2026-05-10T11:59:00Z') });
  });

  it('reads nothing when the cursor is beyond the window end (e.g. set in the future)', () => {
    expect(nextWindow(new Date('2026-05-11T00:00:00Z'), runStart, 600, 60)).toBeNull();
  });

  it('still re-reads the overlap when the cursor is exactly at the window end', () => {
    expect(nextWindow(new Date('2026-05-10T11:59:00Z'), runStart, 600, 60)).toEqual({
      start: new Date('2026-05-10T11:49:00Z'),
      end: new Date('2026-05-10T11:59:00Z'),
    });
  });
});

describe('formatInZone', () => {
  it('formats UTC wall-clock time without zone or fraction', () => {
    expect(formatInZone(new Date('2026-01-02T03:04:05.678Z'), 'UTC')).toBe('2026-01-02T03:04:05');
  });

  it('formats in another zone, across daylight saving', () => {
    expect(formatInZone(new Date('2026-01-15T12:00:00Z'), 'America/New_York')).toBe('2026-01-15T07:00:00');
    expect(formatInZone(new Date('2026-07-15T12:00:00Z'), 'America/New_York')).toBe('2026-07-15T08:00:00');
    expect(formatInZone(new Date('2026-07-15T00:30:00Z'), 'UTC')).toBe('2026-07-15T00:30:00');
  });

  it('gives midnight as 00, not 24', () => {
    expect(formatInZone(new Date('2026-03-01T00:00:00Z'), 'UTC')).toBe('2026-03-01T00:00:00');
    expect(dateInZone(new Date('2026-03-01T23:30:00Z'), 'Europe/Berlin')).toBe('2026-03-02');
  });

  it('floors to the second', () => {
    expect(floorToSecond(new Date('2026-01-01T00:00:00.999Z')).toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('quotaDayOf', () => {
  it('resets at midnight UTC by default', () => {
    const qd = quotaDayOf(new Date('2026-05-10T23:59:59Z'), { timeZone: 'UTC', resetHour: 0 });
    expect(qd.day).toBe('2026-05-10');
    expect(qd.resetsAt.toISOString()).toBe('2026-05-11T00:00:00.000Z');
  });

  it('honours a reset hour and time zone', () => {
    const rule = { timeZone: 'America/Los_Angeles', resetHour: 3 };
    const before = quotaDayOf(new Date('2026-07-01T09:59:00Z'), rule); // 02:59 PDT
    const after = quotaDayOf(new Date('2026-07-01T10:00:00Z'), rule); // 03:00 PDT
    expect(before.day).toBe('2026-06-30');
    expect(after.day).toBe('2026-07-01');
    expect(before.resetsAt.toISOString()).toBe('2026-07-01T10:00:00.000Z');
    expect(after.startsAt.toISOString()).toBe('2026-07-01T10:00:00.000Z');
  });

  it('answers each rule for itself when many keys ask at one instant, and hands out its own dates', () => {
    const at = new Date('2026-03-08T09:30:00Z'); // 01:30 PST on the day Los Angeles moves to PDT
    const la = { timeZone: 'America/Los_Angeles', resetHour: 3 };
    const utc = { timeZone: 'UTC', resetHour: 0 };
    const first = quotaDayOf(at, la);
    expect(quotaDayOf(at, utc).day).toBe('2026-03-08');
    expect(first.day).toBe('2026-03-07');
    first.resetsAt.setTime(0);
    const again = quotaDayOf(at, la);
    expect(again.day).toBe('2026-03-07');
    expect(again.resetsAt.toISOString()).toBe('2026-03-08T10:00:00.000Z'); // 03:00 PDT
  });

  it('turns at the reset hour on the days the clocks move', () => {
    const rule = { timeZone: 'America/Los_Angeles', resetHour: 3 };
    const cases: Array<[string, string]> = [
      ['2026-03-08T09:59:59Z', '2026-03-07'], // 01:59:59 PST
      ['2026-03-08T10:00:00Z', '2026-03-08'], // 03:00 PDT: the clocks skipped 02:00-03:00
      ['2026-11-01T10:30:00Z', '2026-10-31'], // 02:30 PST, after the clocks went back from 02:00 PDT to 01:00
      ['2026-11-01T11:00:00Z', '2026-11-01'], // 03:00 PST
    ];
    for (const [at, day] of cases) {
      const qd = quotaDayOf(new Date(at), rule);
      expect(qd.day).toBe(day);
      expect(qd.startsAt.getTime()).toBeLessThanOrEqual(Date.parse(at));
      expect(qd.resetsAt.getTime()).toBeGreaterThan(Date.parse(at));
    }
    expect(quotaDayOf(new Date('2026-03-08T10:00:00Z'), rule).startsAt.toISOString()).toBe('2026-03-08T10:00:00.000Z');
    expect(quotaDayOf(new Date('2026-11-01T11:00:00Z'), rule).startsAt.toISOString()).toBe('2026-11-01T11:00:00.000Z');
  });
});
