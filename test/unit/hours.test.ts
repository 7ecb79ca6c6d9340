import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseHours } from '../../src/config/hours.ts';
import { loadConfig } from '../../src/config/load.ts';
import { configProblems } from '../support/config-problems.ts';
import { nextOpening, openingLookOn, openingOn, spreadOverHours, statedHours } from '../../src/scheduler/hours.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { slotOf } from '../../src/time.ts';

/** The slots (Sunday 0:00 first) a stated week opens, as "day hour" pairs. */
function openSlots(entries: string[]): string[] {
  const { hours, problems } = parseHours(entries);
  expect(problems).toEqual([]);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const out: string[] = [];
  hours.slots.forEach((v, i) => v && out.push(`${days[Math.floor(i / 24)]} ${i % 24}`));
  return out;
}

describe('stated opening hours', () => {
  it('reads days, ranges and lists of days, and opens every hour a range touches', () => {
    expect(openSlots(['Mon 08:00-11:00'])).toEqual(['Mon 8', 'Mon 9', 'Mon 10']);
    // 08:30-10:15 touches the hours of 8, 9 and 10.
    expect(openSlots(['tue 08:30-10:15'])).toEqual(['Tue 8', 'Tue 9', 'Tue 10']);
    expect(openSlots(['Mon-Wed 23:00-24:00'])).toEqual(['Mon 23', 'Tue 23', 'Wed 23']);
    expect(openSlots(['Fri,Sun 12:00-13:00', 'Sat-Sun 09:00-10:00'])).toEqual(['Sun 9', 'Sun 12', 'Fri 12', 'Sat 9']);
    // A range of days wraps past Saturday.
    expect(openSlots(['Sat-Mon 07:00-08:00'])).toEqual(['Sun 7', 'Mon 7', 'Sat 7']);
    expect(parseHours(['Mon-Sat 08:00-19:00']).hours.open).toBe(66);
  });

  it('names each entry it cannot read and what to write instead', () => {
    const { problems } = parseHours(['Mon-Fri 8-19', 'Monday 08:00-19:00', 'Mon 19:00-08:00', 'Mon 08:00-25:00', 'Mon 08:00-19:00']);
    expect(problems).toEqual([
      '"Mon-Fri 8-19": not days and a range of times (write e.g. "Mon-Fri 08:00-19:00")',
      '"Monday 08:00-19:00": days are Mon, Tue, Wed, Thu, Fri, Sat, Sun, a range of them (Mon-Fri) or a list (Mon,Wed) (write e.g. "Mon-Fri 08:00-19:00")',
      '"Mon 19:00-08:00": the range ends before it starts: a practice open past midnight states each day apart (Fri 18:00-24:00, Sat 00:00-02:00) (write e.g. "Mon-Fri 08:00-19:00")',
      '"Mon 08:00-25:00": a time is 00:00 to 24:00 (write e.g. "Mon-Fri 08:00-19:00")',
    ]);
  });

  it('is refused at start-up with every problem listed, from a file and from CORE_HOURS', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-hours-'));
    const file = join(dir, 'c.json');
    const source = { name: 'clinic', kind: 'core', baseUrl: 'https://api.example.com/api/v1', apikey: 'k1', username: 'u', password: 'p1' };
    writeFileSync(file, JSON.stringify({ sources: [{ ...source, hours: ['Mon-Fri 8-19', 'Sat 13:00-09:00'] }] }));
    expect(configProblems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }))).toEqual([
      expect.stringMatching(/: sources\[0\]\.hours: "Mon-Fri 8-19": not days and a range of times/),
      expect.stringMatching(/: sources\[0\]\.hours: "Sat 13:00-09:00": the range ends before it starts/),
    ]);
    writeFileSync(file, JSON.stringify({ sources: [{ ...source, hours: [] }] }));
    expect(configProblems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }))).toEqual([
      expect.stringMatching(/: sources\[0\]\.hours: state at least one range/),
    ]);

    const env = { CORE_BASE_URL: 'https://api.example.com/api/v1', CORE_APIKEY: 'key-abc', CORE_USERNAME: 'u', CORE_PASSWORD: 'pw' };
    const list = configProblems(() => loadConfig(STREAM_REGISTRY, { env: { ...env, CORE_HOURS: 'Mon-Fri 8-19; Caturday 09:00-13:00' } }));
    expect(list).toEqual([
      expect.stringMatching(/^environment: CORE_HOURS "Mon-Fri 8-19; Caturday 09:00-13:00" is not valid \("Mon-Fri 8-19": not days/),
      expect.stringMatching(/^environment: CORE_HOURS .* is not valid \("Caturday 09:00-13:00": days are Mon/),
    ]);
    expect(list.join('\n')).not.toContain('key-abc');
    const ok = loadConfig(STREAM_REGISTRY, { env: { ...env, CORE_HOURS: 'Mon-Fri 08:00-19:00; Sat 09:00-13:00' } });
    expect(ok.sources[0]).toMatchObject({ hours: ['Mon-Fri 08:00-19:00', 'Sat 09:00-13:00'] });
  });

  it("spreads a model's week over the stated hours, keeping its changes", () => {
    const source = { hours: ['Mon-Sat 08:00-19:00'] };
    const hours = statedHours(source)!;
    expect(statedHours(source)).toBe(hours);
    expect(statedHours({})).toBeNull();
    // A new practice's model, spread round the clock by its first pass: 2 changes an hour, 336 a week.
    const model = new Float64Array(168).fill(2);
    const spread = spreadOverHours(model, hours);
    expect(spread.reduce((a, b) => a + b, 0)).toBeCloseTo(336, 9);
    const tuesday10 = slotOf(Date.parse('2026-12-01T10:30:00Z'), 'UTC');
    const tuesday20 = slotOf(Date.parse('2026-12-01T20:30:00Z'), 'UTC');
    const sunday10 = slotOf(Date.parse('2026-11-29T10:30:00Z'), 'UTC');
    expect(spread[tuesday10]).toBeCloseTo(336 / 66, 9);
    expect(spread[tuesday20]).toBe(0);
    expect(spread[sunday10]).toBe(0);
    // The model itself is never written into, and the spread is kept for the next plan.
    expect(model[tuesday20]).toBe(2);
    expect(spreadOverHours(model, hours)).toBe(spread);
  });

  it("finds each day's opening in the practice's zone, on the days of a daylight-saving change too", () => {
    const hours = parseHours(['Mon-Fri 08:30-19:00', 'Sat 09:00-13:00', 'Sat 07:15-08:00']).hours;
    const zone = 'America/New_York';
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    // Thursday 2026-11-19 (EST, UTC-5): 08:30, and the look ten minutes later.
    expect(iso(openingOn(hours, Date.parse('2026-11-19T15:00:00Z'), zone))).toBe('2026-11-19T13:30:00.000Z');
    expect(iso(openingLookOn(hours, Date.parse('2026-11-19T15:00:00Z'), zone))).toBe('2026-11-19T13:40:00.000Z');
    // Saturday: its earliest range. Sunday: closed.
    expect(iso(openingOn(hours, Date.parse('2026-11-21T15:00:00Z'), zone))).toBe('2026-11-21T12:15:00.000Z');
    expect(openingOn(hours, Date.parse('2026-11-22T15:00:00Z'), zone)).toBeNull();
    // Monday 2026-03-09, the day after the spring change (EDT, UTC-4); and Sunday 2026-03-08 itself, closed.
    expect(iso(openingOn(hours, Date.parse('2026-03-09T15:00:00Z'), zone))).toBe('2026-03-09T12:30:00.000Z');
    // From Saturday evening, the next opening is Monday's, across the change.
    expect(iso(nextOpening(hours, Date.parse('2026-03-07T23:00:00Z'), zone))).toBe('2026-03-09T12:30:00.000Z');
    // A day's own opening is next until it has passed.
    expect(iso(nextOpening(hours, Date.parse('2026-11-19T13:29:00Z'), zone))).toBe('2026-11-19T13:30:00.000Z');
    expect(iso(nextOpening(hours, Date.parse('2026-11-19T13:30:00Z'), zone))).toBe('2026-11-20T13:30:00.000Z');
    expect(nextOpening(parseHours([]).hours, Date.parse('2026-11-19T13:30:00Z'), zone)).toBeNull();
    // On the days of the changes themselves, the wall clock's 08:00 after the hour gained or lost at 2:00.
    const sundays = parseHours(['Sun 08:00-12:00']).hours;
    expect(iso(openingOn(sundays, Date.parse('2026-03-08T15:00:00Z'), zone))).toBe('2026-03-08T12:00:00.000Z');
    expect(iso(openingOn(sundays, Date.parse('2026-11-01T15:00:00Z'), zone))).toBe('2026-11-01T13:00:00.000Z');
    expect(iso(openingLookOn(sundays, Date.parse('2026-03-08T15:00:00Z'), zone))).toBe('2026-03-08T12:10:00.000Z');
  });
});
