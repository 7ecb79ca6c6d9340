import { describe, expect, it } from 'vitest';
import { dateInZone, localDayStart, nextLocalMidnight, zonedToUtc } from '../../src/time.ts';

/** The local midnight that began the day of `ms`, worked out afresh through Intl every time. */
function midnightOf(ms: number, zone: string): number {
  const [y, m, d] = dateInZone(new Date(ms), zone).split('-').map(Number) as [number, number, number];
  return zonedToUtc(y, m, d, 0, zone).getTime();
}

describe('local days', () => {
  it('are the days Intl gives, whatever instants and zones are asked in turn, across daylight-saving changes', () => {
    const zones = ['America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'UTC'];
    // Both 2026 changes of each hemisphere, the minutes around each local midnight, and steps of 17 minutes between.
    const around = ['2026-03-08', '2026-03-29', '2026-04-05', '2026-10-04', '2026-10-25', '2026-11-01'].map((d) =>
      Date.parse(`${d}T00:00:00Z`),
    );
    let asked = 0;
    for (const base of around) {
      for (let t = base - 2 * 86_400_000; t < base + 2 * 86_400_000; t += 17 * 60_000) {
        const zone = zones[asked++ % zones.length]!;
        for (const ms of [t, midnightOf(t, zone) - 1, midnightOf(t, zone)]) {
          const start = localDayStart(ms, zone);
          expect(start).toBe(midnightOf(ms, zone));
          expect(nextLocalMidnight(ms, zone)).toBe(midnightOf(start + 36 * 3_600_000, zone));
        }
      }
    }
    // Lord Howe's half-hour change makes a day of 23.5 hours.
    const short = localDayStart(Date.parse('2026-10-04T06:00:00Z'), 'Australia/Lord_Howe');
    expect(nextLocalMidnight(short, 'Australia/Lord_Howe') - short).toBe(23.5 * 3_600_000);
    // Backwards in time too: an instant before the day last asked.
    expect(localDayStart(Date.parse('2020-02-29T12:00:00Z'), 'UTC')).toBe(Date.parse('2020-02-29T00:00:00Z'));
  });
});
