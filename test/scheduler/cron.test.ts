import { describe, expect, it } from 'vitest';
import { cronProblem, firesBetween, nextFire, normalizeCron, previousFire } from '../../src/cron.ts';

const at = (iso: string) => new Date(iso);

describe('cron expressions', () => {
  it('names the problem in an invalid expression', () => {
    expect(cronProblem('*/15 * * *')).toMatch(/expected 5 fields .* found 4/);
    expect(cronProblem('0 0 * * * *')).toMatch(/expected 5 fields .* found 6/);
    expect(cronProblem('61 * * * *')).toMatch(/^"61 \* \* \* \*" is not a valid cron expression: .*61 expected range 0-59/);
    expect(cronProblem('0 0 * * fri-mon')).toMatch(/Invalid range/);
    expect(cronProblem('*/0 * * * *')).toMatch(/every 0/);
    expect(cronProblem('@often')).toMatch(/unknown macro/);
    expect(cronProblem('0 0 30 2 *')).toMatch(/day of month/);
    expect(cronProblem('0 2 * * *')).toBeNull();
    expect(cronProblem('*/15 7-19 * * mon-sat')).toBeNull();
  });

  it('expands macros to five fields', () => {
    expect(normalizeCron('@daily')).toBe('0 0 * * *');
    expect(normalizeCron('@midnight')).toBe('0 0 * * *');
    expect(normalizeCron('@hourly')).toBe('0 * * * *');
  });

  it('finds the next fire strictly after an instant and the last one at or before it', () => {
    expect(nextFire('*/15 * * * *', 'UTC', at('2026-11-22T08:15:00Z'))).toEqual(at('2026-11-22T08:30:00Z'));
    expect(nextFire('*/15 * * * *', 'UTC', at('2026-11-22T08:14:59.999Z'))).toEqual(at('2026-11-22T08:15:00Z'));
    expect(previousFire('*/15 * * * *', 'UTC', at('2026-11-22T08:15:00Z'))).toEqual(at('2026-11-22T08:15:00Z'));
    expect(previousFire('*/15 * * * *', 'UTC', at('2026-11-22T08:14:59Z'))).toEqual(at('2026-11-22T08:00:00Z'));
  });

  it('reads the expression in the time zone, across daylight-saving changes', () => {
    // New York leaves daylight saving on 2026-11-01: 02:00 is UTC-4 before, UTC-5 after.
    expect(nextFire('0 2 * * *', 'America/New_York', at('2026-10-30T12:00:00Z'))).toEqual(at('2026-10-31T06:00:00Z'));
    expect(nextFire('0 2 * * *', 'America/New_York', at('2026-11-01T12:00:00Z'))).toEqual(at('2026-11-02T07:00:00Z'));
    expect(firesBetween('0 2 * * *', 'Europe/Berlin', at('2026-11-20T00:00:00Z'), at('2026-11-22T01:00:00Z'))).toEqual([
      at('2026-11-20T01:00:00Z'),
      at('2026-11-21T01:00:00Z'),
      at('2026-11-22T01:00:00Z'),
    ]);
  });

  it('fires a time skipped by daylight saving once, after the gap, and a repeated time once', () => {
    // 2026-03-08 02:30 does not exist in New York.
    expect(firesBetween('30 2 * * *', 'America/New_York', at('2026-03-07T12:00:00Z'), at('2026-03-09T12:00:00Z'))).toEqual([
      at('2026-03-08T07:30:00Z'),
      at('2026-03-09T06:30:00Z'),
    ]);
    // 2026-11-01 01:30 happens twice in New York.
    expect(firesBetween('30 1 * * *', 'America/New_York', at('2026-10-31T12:00:00Z'), at('2026-11-01T12:00:00Z'))).toHaveLength(1);
  });

  it('fires on a day matching either day of month or day of week, as classic cron does', () => {
    const fires = firesBetween('0 9 13 * fri', 'UTC', at('2026-11-01T00:00:00Z'), at('2026-11-30T00:00:00Z')).map((d) =>
      d.toISOString().slice(0, 10),
    );
    expect(fires).toEqual(['2026-11-06', '2026-11-13', '2026-11-20', '2026-11-27']);
  });
});
