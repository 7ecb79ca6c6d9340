/**
 * The change model: hour-of-week slots in a zone, what a window adds, and the
 * rates read back with their shrinkage.
 */
import { describe, expect, it } from 'vitest';
import {
  ChangeTally,
  exposureBySlot,
  RECENT_HALF_LIFE_DAYS,
  SLOTS,
  windowObservation,
  type StoredSlot,
} from '../../src/state/change-model.ts';
import {
  disjoint,
  EVIDENCE_LOOKBACK_HOURS,
  EVIDENCE_PRIOR_HOURS,
  evidenceOf,
  expectedSince,
  fadingKept,
  fadingSweeps,
  poissonTail,
  practiceExcess,
  surprisesFound,
  PRIOR_PER_HOUR,
  slotRates,
  splitAtFirstChange,
  type Evidence,
  type WindowFound,
  withEvidence,
  withExcess,
  withPracticeHours,
  openHourRate,
  withRecentHours,
  slotRatesWithMoved,
  emptyRecentHours,
} from '../../src/scheduler/rates.ts';
import { slotOf, wallSlot, wallToInstant, zoneOffsetMs } from '../../src/time.ts';

const at = (iso: string) => new Date(iso);
const MON_10 = 1 * 24 + 10;

describe('hour-of-week slots', () => {
  it('reads an instant in the practice zone, across daylight saving', () => {
    // Monday 2026-11-23 10:00 in New York (UTC-5).
    expect(slotOf(at('2026-11-23T15:00:00Z').getTime(), 'America/New_York')).toBe(MON_10);
    expect(slotOf(at('2026-11-23T15:00:00Z').getTime(), 'UTC')).toBe(1 * 24 + 15);
    // Saturday 2026-10-31 10:00 in New York is UTC-4.
    expect(slotOf(at('2026-10-31T14:30:00Z').getTime(), 'America/New_York')).toBe(6 * 24 + 10);
    expect(slotOf(at('2026-11-23T04:45:00Z').getTime(), 'Asia/Kolkata')).toBe(1 * 24 + 10);
    expect(wallSlot('2026-11-23T10:59:59')).toBe(MON_10);
  });

  it('gives each instant the offset the zone has then, on the days it changes as on the others', () => {
    // The offsets are kept by day when a day has one, by quarter hour when it changes within the day: each compared
    // with the zone's own answer, over days that change (daylight saving, a half-hour shift) and days that do not.
    const direct = (ms: number, timeZone: string) => {
      const p: Record<string, number> = {};
      const f = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
      for (const part of f.formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
      return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - Math.floor(ms / 1000) * 1000;
    };
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    for (const zone of ['America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/St_Johns']) {
      for (const day of ['2026-03-08', '2026-03-29', '2026-04-05', '2026-10-04', '2026-10-25', '2026-11-01', '2026-11-23']) {
        const start = Date.parse(`${day}T00:00:00Z`) - 86_400_000;
        for (let i = 0; i < 300; i++) {
          const ms = start + Math.floor(random() * 3 * 86_400_000);
          expect(zoneOffsetMs(ms, zone), `${zone} ${new Date(ms).toISOString()}`).toBe(direct(ms, zone));
        }
      }
    }
  });

  it("spreads a window's hours over the slots it covers", () => {
    const e = exposureBySlot(at('2026-11-23T14:30:00Z'), at('2026-11-23T16:00:00Z'), 'America/New_York');
    expect(Object.fromEntries(e)).toEqual({ [MON_10 - 1]: 0.5, [MON_10]: 1 });
  });
});

describe('what a window teaches the model', () => {
  it('counts rows modified since the cursor it started from, by slot', () => {
    const tally = new ChangeTally('2026-11-23T09:00:00');
    tally.addPage(['2026-11-23T08:59:59', '2026-11-23T09:10:00', '2026-11-23T10:05:00', '2026-11-23T10:06:00'], 3);
    const seen = windowObservation(tally, at('2026-11-23T09:00:00Z'), at('2026-11-23T11:00:00Z'), 'UTC', false);
    expect(Object.fromEntries(seen.changes)).toEqual({ [MON_10 - 1]: 1, [MON_10]: 2 });
    expect(Object.fromEntries(seen.exposure)).toEqual({ [MON_10 - 1]: 1, [MON_10]: 1 });
  });

  it('spreads changed rows that carry no modification time over the window, except on a first pass', () => {
    const tally = new ChangeTally(null);
    tally.addPage([null, null, null], 2);
    tally.addPage([null], 2);
    const later = windowObservation(tally, at('2026-11-23T09:00:00Z'), at('2026-11-23T11:00:00Z'), 'UTC', false);
    expect(Object.fromEntries(later.changes)).toEqual({ [MON_10 - 1]: 2, [MON_10]: 2 });
    expect(windowObservation(tally, at('2026-11-23T09:00:00Z'), at('2026-11-23T11:00:00Z'), 'UTC', true).changes.size).toBe(0);
  });

  it('survives a checkpoint: a resumed window keeps what its earlier pages counted', () => {
    const tally = new ChangeTally('2026-11-23T09:00:00');
    tally.addPage(['2026-11-23T10:05:00'], 1);
    const resumed = ChangeTally.from('2026-11-23T09:00:00', JSON.parse(JSON.stringify(tally.toJSON())));
    resumed.addPage(['2026-11-23T10:06:00'], 1);
    expect(resumed.bySlot.get(MON_10)).toBe(2);
    expect(resumed.earliest).toBe('2026-11-23T10:05:00');
  });

  it("keeps the earliest change since the cursor: when the window's changes began", () => {
    const tally = new ChangeTally('2026-11-23T09:00:00');
    tally.addPage(['2026-11-23T10:30:00', '2026-11-23T08:59:59', null], 2);
    tally.addPage(['2026-11-23T10:12:00'], 1);
    expect(tally.earliest).toBe('2026-11-23T10:12:00');
    expect(new ChangeTally(null).earliest).toBeNull();
    // Wall clock to instant, across the zone's offset and its daylight-saving change.
    expect(wallToInstant('2026-11-23T10:12:00', 'America/New_York').toISOString()).toBe('2026-11-23T15:12:00.000Z');
    expect(wallToInstant('2026-07-01T10:12:05.250', 'America/New_York').toISOString()).toBe('2026-07-01T14:12:05.250Z');
    expect(wallToInstant('2026-11-23T10:12', 'UTC').toISOString()).toBe('2026-11-23T10:12:00.000Z');
  });
});

describe('slotRates', () => {
  const week = (perHour: (slot: number) => number, hours = 4, asOf = at('2026-11-23T00:00:00Z')): StoredSlot[] =>
    Array.from({ length: SLOTS }, (_, slot) => ({
      slot,
      changes: perHour(slot) * hours,
      exposureHours: hours,
      recentChanges: 0,
      recentExposureHours: 0,
      asOf,
    }));

  it('knows nothing at first: one change a day, evenly', () => {
    const r = slotRates([], at('2026-11-23T00:00:00Z'));
    expect(r[MON_10]).toBeCloseTo(PRIOR_PER_HOUR, 6);
    expect(r[3]).toBeCloseTo(PRIOR_PER_HOUR, 6);
  });

  it('learns opening hours: busy slots near their observed rate, closed ones near zero', () => {
    const open = (slot: number) => (slot % 24 >= 8 && slot % 24 < 19 && slot >= 24 && slot < 6 * 24 ? 30 : 0);
    const r = slotRates(week(open), at('2026-11-23T00:00:00Z'));
    expect(r[MON_10]).toBeGreaterThan(28);
    expect(r[MON_10]).toBeLessThan(30.5);
    expect(r[1 * 24 + 3]).toBeLessThan(0.1);
  });

  it('fills a weekday slot never seen from the same hour on other days', () => {
    const stored = week((slot) => (slot % 24 === 10 ? 12 : 0)).filter((s) => s.slot !== MON_10);
    const r = slotRates(stored, at('2026-11-23T00:00:00Z'));
    expect(r[MON_10]).toBeGreaterThan(11);
  });

  it('forgets with a half-life: old observations weigh less than new ones', () => {
    const old = week(() => 10, 4, at('2026-09-01T00:00:00Z'));
    const recent = week(() => 1, 4, at('2026-11-22T00:00:00Z'));
    const r = slotRates(
      [...old, ...recent].map((s, i) => ({ ...s, slot: i % SLOTS })),
      at('2026-11-23T00:00:00Z'),
    );
    expect(r[MON_10]).toBeLessThan(3);
  });

  it('expects changes and their summed age from the rates', () => {
    const rates = new Float64Array(SLOTS).fill(60); // one a minute
    const e = expectedSince(rates, 'UTC', at('2026-11-23T10:00:00Z').getTime(), at('2026-11-23T10:10:00Z').getTime());
    expect(e.changes).toBeCloseTo(10, 6);
    expect(e.ageMinutes).toBeCloseTo(50, 6); // ages 0..10 minutes, 10 of them: 10 * 10 / 2
  });
});

/**
 * A stream's checks' windows ending before `end`, newest first: up to eight, of up to an hour and a half each, some
 * with their first change, quiet gaps of up to `gapMinutes` between them; and where the earliest starts.
 */
function randomWindows(random: () => number, end: number, gapMinutes: number): { windows: WindowFound[]; earliest: number } {
  const windows: WindowFound[] = [];
  let to = end - Math.floor(random() * 30 * 60_000);
  for (let k = 0; k < 1 + Math.floor(random() * 8); k++) {
    const from = to - Math.floor(1 + random() * 90) * 60_000;
    const changes = Math.floor(random() * 25);
    windows.push({ from, to, changes, ...(random() < 0.3 ? { firstChangeAt: from + Math.floor(random() * (to - from)) } : {}) });
    to = from - Math.floor(random() * gapMinutes * 60_000);
  }
  return { windows, earliest: to };
}

describe("today's evidence", () => {
  const HOUR = 3_600_000;
  const t = (iso: string) => at(iso).getTime();
  it('reads each window against the rates withEvidence gives, without copying them: the same evidence to the last bit', () => {
    // The evidence as first written: the whole week of rates corrected by the evidence so far, then walked over each
    // window. evidenceOf now corrects only the slots a window reads; both must agree exactly, on random days.
    const reference = (rates: Float64Array, zone: string, windows: WindowFound[], now: number): Evidence | null => {
      const recent = splitAtFirstChange(disjoint(windows)).filter((w) => w.to <= now && now - w.to <= EVIDENCE_LOOKBACK_HOURS * HOUR);
      let e: Evidence | null = null;
      for (const w of recent) {
        const hours = (w.to - w.from) / HOUR;
        const prior: number = expectedSince(withEvidence(rates, zone, e, w.to), zone, w.from, w.to).changes / hours;
        const forecast = expectedSince(rates, zone, w.from, w.to).changes / hours;
        e = {
          at: w.to,
          observedPerHour: (w.changes + EVIDENCE_PRIOR_HOURS * prior) / (hours + EVIDENCE_PRIOR_HOURS),
          forecastPerHour: forecast,
        };
      }
      return e;
    };
    let seed = 5;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    for (let i = 0; i < 2_000; i++) {
      const zone = i % 3 === 0 ? 'UTC' : i % 3 === 1 ? 'America/New_York' : 'Asia/Kathmandu';
      const rates = Float64Array.from({ length: SLOTS }, () => (random() < 0.4 ? 0 : random() * 40));
      // Around the autumn change in New York (2026-11-01) as often as on an ordinary day.
      const now = t(i % 2 ? '2026-11-01T12:00:00Z' : '2026-11-19T18:00:00Z') + Math.floor(random() * 6 * HOUR);
      const { windows } = randomWindows(random, now, 20);
      expect(evidenceOf(rates, zone, windows, now)).toEqual(reference(rates, zone, windows, now));
    }
  });

  it('keeps what it read of a stream between instants, and gives at each what fresh lists would give', () => {
    // A source's probes ask for the same stream's evidence, surprises and corrections at many instants with the same
    // lists (src/scheduler/kept.ts): what is kept must be what the instant asks for, whichever order they come in.
    let seed = 11;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const copy = (list: WindowFound[]) => list.map((w) => ({ ...w }));
    for (let i = 0; i < 300; i++) {
      const zone = i % 2 ? 'UTC' : 'America/New_York';
      const rates = Float64Array.from({ length: SLOTS }, () => (random() < 0.4 ? 0 : random() * 40));
      const { windows, earliest: to } = randomWindows(random, t('2026-11-19T20:00:00Z'), 60);
      for (let k = 0; k < 12; k++) {
        // Instants from the earliest window's end to hours after the latest's: windows come in and leave the lookbacks.
        const now = to + Math.floor(random() * 16 * HOUR);
        const e = evidenceOf(rates, zone, windows, now);
        expect(e).toEqual(evidenceOf(Float64Array.from(rates), zone, copy(windows), now));
        const corrected = withEvidence(rates, zone, e);
        expect(corrected).toEqual(withEvidence(Float64Array.from(rates), zone, e ? { ...e } : null));
        // Asked again, the same array: nothing is copied for a probe that changes nothing.
        expect(withEvidence(rates, zone, e)).toBe(corrected);
        const excess = withExcess(corrected, zone, now, 2 + (k % 3));
        expect(excess).toEqual(withExcess(Float64Array.from(corrected), zone, now, 2 + (k % 3)));
        const stream = { resource: 'appointments', forecast: rates, windows, usualPerWeek: 100 };
        expect(surprisesFound([stream], zone, now)).toEqual(
          surprisesFound([{ ...stream, forecast: Float64Array.from(rates), windows: copy(windows) }], zone, now),
        );
      }
    }
  });

  /** Open 8-19 UTC at `perHour`, next to nothing otherwise. */
  const openHours = (perHour: number) => Float64Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? perHour : 0.001));

  it('lets go of what it kept of evidence too old to be applied', () => {
    // Each window's end starts a correction whose weights are kept: a replica's checks add one a run, all day.
    const forecast = openHours(10);
    const start = t('2026-11-23T00:00:00Z');
    const kept: number[] = [];
    for (let h = 0; h < 48; h++) {
      const now = start + h * HOUR;
      const windows: WindowFound[] = [
        { from: now - 50 * 60_000, to: now - 20 * 60_000, changes: 3 },
        { from: now - 20 * 60_000, to: now - 60_000, changes: 9 },
      ];
      withEvidence(forecast, 'UTC', evidenceOf(forecast, 'UTC', windows, now));
      kept.push(fadingKept());
    }
    // Two starts an hour: those of the last EVIDENCE_LOOKBACK_HOURS and a little more, not the 96 of two days.
    expect(Math.max(...kept)).toBeLessThanOrEqual(2 * (EVIDENCE_LOOKBACK_HOURS + 3));
    expect(kept.at(-1)).toBeGreaterThanOrEqual(2);
  });
  it('sweeps what it kept once an hour of the clock, however the instants asked go back and forth', () => {
    // The decider asks for a tick, then probes up to an hour ahead, then the next tick: a sweep at each step back walked
    // every start kept, thousands of times an hour on a fleet.
    const forecast = openHours(10);
    const start = t('2026-11-24T09:00:00Z');
    const windows: WindowFound[] = [{ from: start - 40 * 60_000, to: start - 10 * 60_000, changes: 6 }];
    const before = fadingSweeps();
    for (let i = 0; i < 400; i++) {
      const tick = start + i * 15_000;
      evidenceOf(forecast, 'UTC', windows, tick);
      evidenceOf(forecast, 'UTC', windows, tick + 50 * 60_000);
    }
    // 400 ticks of 15 s: 100 minutes of the clock, and probes 50 minutes ahead of them.
    expect(fadingSweeps() - before).toBeLessThanOrEqual(3);
  });

  const slot = (iso: string) => slotOf(t(iso), 'UTC');

  it('raises the next hours at once when a check finds a rush the forecast did not expect, even where it expects nothing', () => {
    const forecast = openHours(20);
    // 18:00-19:30: 60 changes, where the forecast expected 20 (18:00-19:00) and next to nothing after.
    const e = evidenceOf(
      forecast,
      'UTC',
      [{ from: t('2026-11-23T18:00:00Z'), to: t('2026-11-23T19:30:00Z'), changes: 60 }],
      t('2026-11-23T19:31:00Z'),
    );
    expect(e!.observedPerHour).toBeGreaterThan(25);
    const rates = withEvidence(forecast, 'UTC', e);
    expect(rates[slot('2026-11-23T20:00:00Z')]).toBeGreaterThan(10);
    // It fades back to the forecast with a half-life of a couple of hours.
    expect(rates[slot('2026-11-24T02:00:00Z')]).toBeLessThan(rates[slot('2026-11-23T20:00:00Z')]! / 6);
    expect(rates[slot('2026-11-24T06:00:00Z')]).toBeLessThan(0.5);
    // Hours before the evidence are left alone.
    expect(rates[slot('2026-11-23T17:00:00Z')]).toBe(forecast[slot('2026-11-23T17:00:00Z')]);
  });

  it('lowers the next hours when checks find fewer than forecast, and a short window moves it little', () => {
    const forecast = openHours(30);
    const now = t('2026-11-23T11:01:00Z');
    const hourEmpty = evidenceOf(forecast, 'UTC', [{ from: t('2026-11-23T10:00:00Z'), to: t('2026-11-23T11:00:00Z'), changes: 0 }], now);
    const lowered = withEvidence(forecast, 'UTC', hourEmpty)[slot('2026-11-23T11:30:00Z')]!;
    expect(lowered).toBeLessThan(20);
    expect(lowered).toBeGreaterThan(5);
    const minutesEmpty = evidenceOf(forecast, 'UTC', [{ from: now - 5 * 60_000, to: now - 60_000, changes: 0 }], now);
    expect(withEvidence(forecast, 'UTC', minutesEmpty)[slot('2026-11-23T11:30:00Z')]).toBeGreaterThan(27);
    // As forecast: nothing changes.
    const asForecast = evidenceOf(forecast, 'UTC', [{ from: t('2026-11-23T10:00:00Z'), to: t('2026-11-23T11:00:00Z'), changes: 30 }], now);
    expect(withEvidence(forecast, 'UTC', asForecast)[slot('2026-11-23T11:30:00Z')]).toBeCloseTo(30, 6);
  });

  it('builds on earlier windows: a run of short windows that keep finding changes adds up', () => {
    const forecast = openHours(0.001);
    const start = t('2026-11-23T20:00:00Z');
    const windows = Array.from({ length: 6 }, (_, i) => ({
      from: start + i * 10 * 60_000,
      to: start + (i + 1) * 10 * 60_000,
      changes: 10,
    }));
    const one = evidenceOf(forecast, 'UTC', windows.slice(0, 1), start + HOUR);
    const six = evidenceOf(forecast, 'UTC', windows, start + HOUR);
    expect(six!.observedPerHour).toBeGreaterThan(2 * one!.observedPerHour);
    expect(six!.observedPerHour).toBeLessThan(60);
    // Nothing recent: no evidence.
    expect(evidenceOf(forecast, 'UTC', windows, start + 12 * HOUR)).toBeNull();
  });

  it('counts the hours of overlapping windows once', () => {
    const w = (from: string, to: string, changes: number) => ({ from: t(from), to: t(to), changes });
    expect(disjoint([w('2026-11-23T10:05:00Z', '2026-11-23T10:20:00Z', 3), w('2026-11-23T10:00:00Z', '2026-11-23T10:10:00Z', 2)])).toEqual([
      w('2026-11-23T10:00:00Z', '2026-11-23T10:10:00Z', 2),
      w('2026-11-23T10:10:00Z', '2026-11-23T10:20:00Z', 3),
    ]);
  });

  it('finds the first check of the last hours that found far more than forecast, on each stream', () => {
    expect(poissonTail(0, 2)).toBe(1);
    expect(poissonTail(1, 2)).toBeCloseTo(1 - Math.exp(-2), 12);
    expect(poissonTail(3, 1)).toBeCloseTo(1 - Math.exp(-1) * 2.5, 12);
    const now = t('2026-11-23T20:00:00Z');
    const w = (minutesAgo: number, minutes: number, changes: number) => ({
      from: now - (minutesAgo + minutes) * 60_000,
      to: now - minutesAgo * 60_000,
      changes,
    });
    const streams = [
      // Closed hours forecast: 0.1 an hour. A 40-minute window with 12 changes, then more of the rush.
      { resource: 'appointments', forecast: openHours(0.1), windows: [w(200, 60, 0), w(100, 40, 12), w(50, 10, 8)], usualPerWeek: 900 },
      // 5 changes where 3 were expected: chance.
      { resource: 'customers', forecast: openHours(3), windows: [w(30, 60, 5)], usualPerWeek: 100 },
      // A surprise, but older than the wake's look-back.
      { resource: 'orders', forecast: openHours(0.1), windows: [w(4 * 60, 30, 20)], usualPerWeek: 100 },
    ];
    // openHours(x) is x an hour from 8 to 19 and 0 otherwise: at 20:00 UTC, closed.
    const found = surprisesFound(streams, 'UTC', now);
    expect([...found]).toEqual([['appointments', now - 100 * 60_000]]);
  });

  it('reads a long window that ends in a rush by when its changes began, not as their average over the window', () => {
    // A practice at 1 change an hour (a quiet day); the check at 18:15 reads 14:15-18:15 and finds the rush's first 8.
    const forecast = openHours(1);
    const now = t('2026-11-23T18:16:00Z');
    const window = { from: t('2026-11-23T14:15:00Z'), to: t('2026-11-23T18:15:00Z'), changes: 8 };
    const started = { ...window, firstChangeAt: t('2026-11-23T18:01:00Z') };
    expect(splitAtFirstChange([started])).toEqual([
      { from: window.from, to: started.firstChangeAt, changes: 1 },
      { from: started.firstChangeAt, to: window.to, changes: 7 },
    ]);
    // In a busy hour's short windows where the first change falls is chance: one quiet for less than half an hour is read whole.
    const short = { from: t('2026-11-23T17:50:00Z'), to: window.to, changes: 8, firstChangeAt: t('2026-11-23T18:01:00Z') };
    expect(splitAtFirstChange([short])).toEqual([short]);
    // One change, or a first change at the window's edge: nothing to split.
    expect(splitAtFirstChange([{ ...started, changes: 1 }])).toEqual([{ ...started, changes: 1 }]);
    expect(splitAtFirstChange([{ ...window, firstChangeAt: window.from }])).toEqual([{ ...window, firstChangeAt: window.from }]);
    // Averaged over four hours, 8 changes are twice the forecast: no surprise, and the next hour raised a little.
    const stream = (w: typeof window) => [{ resource: 'orders', forecast, windows: [w], usualPerWeek: 100 }];
    expect(surprisesFound(stream(window), 'UTC', now).size).toBe(0);
    const averaged = withEvidence(forecast, 'UTC', evidenceOf(forecast, 'UTC', [window], now))[slot('2026-11-23T18:30:00Z')]!;
    expect(averaged).toBeLessThan(3);
    // Read from its first change: 7 in 14 minutes is a surprise, and the next hour is planned busy.
    expect([...surprisesFound(stream(started), 'UTC', now)]).toEqual([['orders', window.to]]);
    // The least a check must find to wake the practice counts every change it found, the first one included.
    const quieter = (w: typeof started) => [{ resource: 'orders', forecast: openHours(0.1), windows: [w], usualPerWeek: 100 }];
    expect(surprisesFound(quieter({ ...started, changes: 5 }), 'UTC', now).size).toBe(1);
    expect(surprisesFound(quieter({ ...started, changes: 4 }), 'UTC', now).size).toBe(0);
    const split = withEvidence(forecast, 'UTC', evidenceOf(forecast, 'UTC', [started], now))[slot('2026-11-23T18:30:00Z')]!;
    expect(split).toBeGreaterThan(4);
    // Overlapping windows keep their first change.
    expect(disjoint([started])[0]!.firstChangeAt).toBe(started.firstChangeAt);
  });

  it("shares the practice's excess over the last hour by each stream's usual share, when more than one stream shows it", () => {
    const now = t('2026-11-23T20:00:00Z');
    // An evening the forecasts do not expect: checks every 10 min find 18 appointment and 2 customer changes each.
    const every10 = (n: number) =>
      Array.from({ length: 6 }, (_, i) => ({ from: now - (6 - i) * 10 * 60_000, to: now - (5 - i) * 10 * 60_000, changes: n }));
    const streams = [
      { resource: 'appointments', forecast: openHours(27), windows: every10(18), usualPerWeek: 900 },
      { resource: 'customers', forecast: openHours(3), windows: every10(2), usualPerWeek: 100 },
      { resource: 'memberships', forecast: openHours(1), windows: [], usualPerWeek: 100 },
    ];
    const shared = practiceExcess(streams, 'UTC', now);
    // 120 an hour over both (9:1, as usual) against about none expected, with a quarter-hour prior: 96 for the
    // pair, 105.6 for the practice, and memberships, an eleventh of its usual changes, gets 9.6.
    expect(shared.get('memberships')).toBeCloseTo(9.6, 2);
    // A stream with evidence gets a share only when two others say so.
    expect(shared.get('appointments')).toBe(0);
    // Checks that overlap (each window reaching back 5 minutes into the one before) say no more than once.
    const overlap = (ws: ReturnType<typeof every10>) => ws.map((w, i) => (i === 0 ? w : { ...w, from: w.from - 5 * 60_000 }));
    const again = practiceExcess(
      [{ ...streams[0]!, windows: overlap(every10(18)) }, { ...streams[1]!, windows: overlap(every10(2)) }, streams[2]!],
      'UTC',
      now,
    );
    expect(again.get('memberships')).toBeCloseTo(shared.get('memberships')!, 6);
    // A burst on one stream alone is not the practice's: nothing shared.
    const burst = practiceExcess([streams[0]!, { ...streams[1]!, windows: every10(0) }, streams[2]!], 'UTC', now);
    expect(burst.get('memberships')).toBe(0);
    // A quiet spell is not shared: fewer than forecast takes nothing from another stream.
    const noon = t('2026-11-23T12:00:00Z');
    const quiet = () => every10(0).map((w) => ({ ...w, from: w.from - 8 * HOUR, to: w.to - 8 * HOUR }));
    expect(
      practiceExcess([{ ...streams[0]!, windows: quiet() }, { ...streams[1]!, windows: quiet() }, streams[2]!], 'UTC', noon).get(
        'memberships',
      ),
    ).toBe(0);
    // Added to the hour behind and fading after it.
    const rates = withExcess(openHours(0.001), 'UTC', now, 10);
    expect(expectedSince(rates, 'UTC', now - HOUR, now).changes).toBeCloseTo(10, 0);
    expect(rates[slot('2026-11-23T23:30:00Z')]!).toBeLessThan(5);
  });
});

describe('the practice hours, learned within days', () => {
  const asOf = at('2026-11-20T00:00:00Z');
  // 28 days of 8-19 at 30 an hour on weekdays, Sundays closed, as the long memory holds them.
  const open = (slot: number) => slot >= 24 && slot % 24 >= 8 && slot % 24 < 19;
  const long = (slot: number) => ({ changes: open(slot) ? 30 * 4 : 0, exposureHours: 4 });
  /** The recent profile after `moved` days of 18-21 (of the last 4), as the recent half-life weighs them. */
  function stored(moved: number): StoredSlot[] {
    const weights = [0, 1, 2, 3].map((age) => 0.5 ** (age / RECENT_HALF_LIFE_DAYS));
    const recentExposure = weights.reduce((a, b) => a + b, 0) / 7;
    return Array.from({ length: SLOTS }, (_, slot) => {
      const h = slot % 24;
      const weekday = slot >= 24;
      let recent = 0;
      weights.forEach((w, age) => {
        const evening = age < moved;
        const busy = weekday && (evening ? h >= 18 && h < 21 : h >= 8 && h < 19);
        recent += busy ? (30 * w) / 7 : 0;
      });
      return { slot, ...long(slot), recentChanges: recent, recentExposureHours: recentExposure, asOf };
    });
  }
  const TUE = 2 * 24;

  it('keeps the long memory where the recent days agree with it', () => {
    const r = withRecentHours(slotRates(stored(0), asOf), stored(0), asOf);
    expect(r[TUE + 10]!).toBeGreaterThan(25);
    expect(r[TUE + 20]!).toBeLessThan(1);
  });

  it('moves to evening hours within three days, and leaves a closed weekday closed', () => {
    const one = withRecentHours(slotRates(stored(1), asOf), stored(1), asOf);
    const three = withRecentHours(slotRates(stored(3), asOf), stored(3), asOf);
    // After one evening day, the evening is planned for at a fraction; after three, at most of its rate.
    expect(one[TUE + 20]!).toBeGreaterThan(5);
    expect(three[TUE + 20]!).toBeGreaterThan(one[TUE + 20]!);
    expect(three[TUE + 20]!).toBeGreaterThan(15);
    // The mornings it no longer has are planned for at a fraction.
    expect(three[TUE + 10]!).toBeLessThan(10);
    // Sunday stays closed.
    expect(three[20]!).toBeLessThan(1);
  });

  it("leaves a first pass's history out of the recent profile, and counts a later window in it", () => {
    const tally = new ChangeTally(null);
    // 20 changes at 10:00 three weeks ago, 20 at 20:00 yesterday: yesterday looks busier only because older
    // changes of the same records hide behind their latest.
    tally.addPage([...Array(20).fill('2026-11-02T10:15:00'), ...Array(20).fill('2026-11-22T20:15:00')], 40);
    const first = windowObservation(tally, at('2026-10-26T00:00:00Z'), at('2026-11-23T12:00:00Z'), 'UTC', true);
    expect(first.changes.get(1 * 24 + 10)).toBeCloseTo(first.changes.get(0 * 24 + 20)!, 6);
    expect(first.recentChanges!.size).toBe(0);
    expect(first.recentExposure!.size).toBe(0);
    // A window read later counts in both.
    const later = new ChangeTally('2026-11-23T12:00:00');
    later.addPage(Array(5).fill('2026-11-23T12:30:00'), 5);
    const seen = windowObservation(later, at('2026-11-23T12:00:00Z'), at('2026-11-23T13:00:00Z'), 'UTC', false);
    expect(seen.recentChanges ?? seen.changes).toEqual(seen.changes);
    expect(seen.changes.get(1 * 24 + 12)).toBe(5);
  });
});

/**
 * A new practice's stored slots: a first pass spread `flat` changes an hour round the clock over 29 days, then each
 * weekday `read` brought `busy` an hour in 8-19 (counted in the long memory as in the recent days); the weekdays
 * `quiet` were read and found empty.
 */
function newPracticeSlots(
  asOf: Date,
  { read, quiet = [], flat, busy }: { read: number[]; quiet?: number[]; flat: number; busy: number },
): StoredSlot[] {
  const exposure = 29 / 7;
  return Array.from({ length: SLOTS }, (_, slot) => {
    const weekday = Math.floor(slot / 24);
    const h = slot % 24;
    const recent = read.includes(weekday) && h >= 8 && h < 19 ? busy : 0;
    return {
      slot,
      changes: flat * exposure + recent,
      exposureHours: exposure,
      recentChanges: recent,
      recentExposureHours: read.includes(weekday) || quiet.includes(weekday) ? 1 : 0,
      asOf,
    };
  });
}

describe('the weekdays a new practice opens', () => {
  // Saturday's midnight: a new practice's first pass found a few records (a twentieth of a change an hour round the
  // clock), then pmsync read its days day by day.
  const asOf = at('2026-11-21T00:00:00Z');
  const dayOf = (name: 'sun' | 'mon' | 'thu' | 'fri' | 'sat') => ({ sun: 0, mon: 1, thu: 4, fri: 5, sat: 6 })[name] * 24;
  const stored = (read: number[], quiet: number[] = []) => newPracticeSlots(asOf, { read, quiet, flat: 0.05, busy: 12 });

  it('gives a weekday not read yet the hours of the one read, however much quieter its first pass had it', () => {
    // One Friday read: its memory many times busier than every other weekday's, which only the first pass holds.
    const { rates, movedIn } = slotRatesWithMoved(stored([5]), asOf, 6);
    expect(rates[dayOf('sat') + 10]!).toBeGreaterThan(10 * rates[dayOf('sat') + 3]!);
    expect(movedIn[dayOf('sat') + 10]).toBe(1);
    expect(rates[dayOf('mon') + 10]!).toBeGreaterThan(10 * rates[dayOf('mon') + 3]!);
  });

  it('closes a weekday read and found quiet, and leaves open those not read yet', () => {
    // Friday and Saturday read busy, Sunday read and empty: on Monday, the Sunday is closed, the Monday is not.
    const { rates, movedIn } = slotRatesWithMoved(stored([5, 6], [0]), at('2026-11-23T00:00:00Z'), 1);
    expect(movedIn[dayOf('sun') + 10]).toBe(0);
    expect(rates[dayOf('sun') + 10]!).toBeLessThan(2 * rates[dayOf('sun') + 3]! + 0.01);
    expect(movedIn[dayOf('mon') + 10]).toBe(1);
    expect(rates[dayOf('mon') + 10]!).toBeGreaterThan(10 * rates[dayOf('mon') + 3]!);
  });
});

describe("the practice's hours, read from all its streams", () => {
  const asOf = at('2026-11-20T00:00:00Z'); // a Friday's midnight
  const FRI = 5 * 24;
  /** A new practice's stream, one Thursday read day by day. */
  const newStream = (flat: number, busy: number) => newPracticeSlots(asOf, { read: [4], flat, busy });
  const read = (stored: StoredSlot[]) => slotRatesWithMoved(stored, asOf, 5);

  it('lends the hours the busy streams show to one whose own changes are too few to show them', () => {
    const appointments = read(newStream(3, 40));
    const customers = read(newStream(2, 15));
    const orders = read(newStream(1.34, 6));
    // Alone, orders' 6 an hour against a memory of 1.3 (which holds the same day) do not move an hour: flat.
    expect(orders.rates[FRI + 10]!).toBeCloseTo(orders.rates[FRI + 3]!, 0);
    expect(orders.movedIn[FRI + 10]).toBe(0);
    // Appointments' do.
    expect(appointments.movedIn[FRI + 10]).toBe(1);
    const [, , o] = withPracticeHours([appointments, customers, orders]);
    // Read with the practice, orders' day is busier than its night, and its day's hours are moved into.
    expect(o!.rates[FRI + 10]!).toBeGreaterThan(2 * orders.rates[FRI + 10]!);
    expect(o!.movedIn[FRI + 10]).toBe(1);
    expect(o!.rates[FRI + 10]!).toBeGreaterThan(3 * o!.rates[FRI + 3]!);
    // The streams' own readings are not written into.
    expect(orders.movedIn[FRI + 10]).toBe(0);
  });

  it('reads the closed hours together: an evening too quiet to call hour by hour is closed as a block', () => {
    // A first pass spread the memory round the clock: about 0.75 changes an hour a stream, 1.5 for the practice. The
    // recent day brought them from 8 to 19 and none in the other 13 hours: 0 against 1.5 is chance hour by hour, 0
    // against 19.5 is not.
    const rates = new Float64Array(SLOTS).fill(0.75);
    const recentOf = (emptyHours: number[]) => {
      const r = emptyRecentHours();
      r.expected.fill(0.75);
      r.changes.fill(0.75);
      for (const h of emptyHours) r.changes[h] = 0;
      r.openHours.fill(1);
      r.open.fill(1);
      return r;
    };
    const closed = [0, 1, 2, 3, 4, 5, 6, 7, 19, 20, 21, 22, 23];
    const streams = () => [0, 1].map(() => ({ rates, movedIn: new Uint8Array(SLOTS), recent: recentOf(closed) }));
    const [a, b] = withPracticeHours(streams());
    for (const s of [a!, b!]) {
      expect(s.rates[FRI + 21]!).toBeLessThan(0.2 * rates[FRI + 21]!);
      expect(s.rates[FRI + 3]!).toBeLessThan(0.2 * rates[FRI + 3]!);
      expect(s.rates[FRI + 10]).toBe(rates[FRI + 10]);
    }
    // Three empty hours (4.5 changes expected, none found) are within chance even together: the memory stands.
    const few = withPracticeHours([0, 1].map(() => ({ rates, movedIn: new Uint8Array(SLOTS), recent: recentOf([20, 21, 22]) })));
    expect(few[0]!.rates).toBe(rates);
  });

  it("prices a stream's quiet hour of its first days near its rate over the practice's open hours, and learns a quiet hour as days add up", () => {
    // A first pass spread each stream's memory round the clock (0.05 an hour); the recent days read the practice at
    // work from 8 to 19: appointments 30 an hour, orders 6 but for 11:00, where it had 2 a day.
    const rates = new Float64Array(SLOTS).fill(0.05);
    const streamOf = (perHour: number, at11: number, days: number) => {
      const r = emptyRecentHours();
      r.expected.fill(0.05 * days);
      r.openHours.fill(days);
      r.open.fill(1);
      for (let h = 8; h < 19; h++) {
        r.changes[h] = (h === 11 ? at11 : perHour) * days;
        // As withRecentHours marks it: its own changes alone beyond chance against its memory.
        r.own[h] = r.changes[h]! > r.expected[h]! + 3 * Math.sqrt(r.expected[h]! + 1) ? 1 : 0;
      }
      return { rates, movedIn: new Uint8Array(SLOTS), recent: r };
    };
    const [, orders] = withPracticeHours([streamOf(30, 30, 1), streamOf(6, 2, 1)]);
    // One day: its 2 at 11:00 are too few to move the hour alone, and its share of the practice's ratio applied to
    // the round-the-clock memory priced it at 0.4 an hour. Shrunk toward its 5.6 an hour over the open hours: half-way.
    expect(orders!.rates[FRI + 11]!).toBeGreaterThan(3);
    expect(orders!.rates[FRI + 11]!).toBeLessThan(orders!.rates[FRI + 10]!);
    // Its busy hours, moved by its own changes, are priced at about their rate; the closed night is not raised.
    expect(orders!.rates[FRI + 10]!).toBeGreaterThan(5);
    expect(orders!.rates[FRI + 3]!).toBeLessThanOrEqual(0.05);
    // Seven such days: the quiet hour's own changes outweigh the rest, and it is learned as quiet.
    const [, week] = withPracticeHours([streamOf(30, 30, 7), streamOf(6, 2, 7)]);
    expect(week!.rates[FRI + 11]!).toBeLessThan(0.5 * week!.rates[FRI + 10]!);
    expect(openHourRate(14, 7, 5.6)).toBeCloseTo(2.45, 2);
  });

  it("leaves a stream whose own recent changes say otherwise, and every stream when the practice's hours did not move", () => {
    const rates = new Float64Array(SLOTS).fill(10);
    const recentOf = (changes: number, expected: number) => {
      const r = emptyRecentHours();
      r.changes.fill(expected);
      r.expected.fill(expected);
      r.openHours.fill(3);
      r.open.fill(1);
      r.changes[10] = changes;
      return r;
    };
    const busy = { rates, movedIn: new Uint8Array(SLOTS), recent: recentOf(90, 30) };
    // A steady stream at 30 an hour at 10:00, as its memory has it: the practice's 10:00 tripled, its own did not.
    const steady = { rates, movedIn: new Uint8Array(SLOTS), recent: recentOf(30, 30) };
    const [, s] = withPracticeHours([busy, steady]);
    expect(s!.rates).toBe(rates);
    // Nothing moved: every stream keeps its own arrays.
    const same = withPracticeHours([steady, steady]);
    expect(same[0]!.rates).toBe(rates);
    expect(same[1]!.movedIn).toBe(steady.movedIn);
  });
});
