/**
 * A practice whose model does not know its hours yet (a new one) shows them
 * through its notifications: its working day today begins with the first of a
 * run of them, and the hours after the current one are weighed by the chance
 * it is still at work then. Whether its model knows its hours is a test of its
 * changes by hour of the day against a day without hours.
 */
import { describe, expect, it } from 'vitest';
import {
  atWorkSince,
  closingRange,
  latestAtWork,
  longestDayEnd,
  notifiedRate,
  stillAtWork,
  workdayOf,
  WORKDAY_HOURS,
} from '../../src/scheduler/observe.ts';
import { hourOfDay, hoursShown } from '../../src/scheduler/rates.ts';
import type { StoredSlot } from '../../src/state/change-model.ts';
import type { NotifiedReading } from '../../src/state/stream-schedule.ts';

const HOUR = 3_600_000;
const DAY_START = Date.UTC(2026, 10, 19, 5); // local midnight in New York
const at = (hours: number) => DAY_START + hours * HOUR;

function reading(resource: string, runStart: number | null, runCount: number, latest: number | null): NotifiedReading {
  return {
    resource,
    pending: 0,
    oldest: null,
    receivedSumMs: 0,
    latestEvent: null,
    latestReceived: latest === null ? null : new Date(latest),
    today: runCount,
    runStart: runStart === null ? null : new Date(runStart),
    runCount,
  };
}

describe('workdayOf', () => {
  it('begins with the earliest run of notifications today and runs to the latest of them', () => {
    const w = workdayOf([reading('appointments', at(8), 12, at(10.5)), reading('orders', at(8.25), 3, at(11))], DAY_START);
    expect(w).toEqual({ from: at(8), last: at(11) });
  });

  it('leaves out a lone change in the night (an online booking: its record created, then updated) and yesterday', () => {
    expect(workdayOf([reading('appointments', at(2), 1, at(2))], DAY_START)).toBeNull();
    expect(workdayOf([reading('appointments', at(-2), 5, at(-1))], DAY_START)).toBeNull();
    // Its record created and updated in the same minute: one minute of notifications.
    const w = workdayOf([reading('orders', at(2), 1, at(2)), reading('appointments', at(8), 4, at(9))], DAY_START);
    expect(w).toEqual({ from: at(8), last: at(9) });
  });

  it('is null before any notification today', () => {
    expect(workdayOf([reading('appointments', null, 0, at(-3))], DAY_START)).toBeNull();
    expect(workdayOf([], DAY_START)).toBeNull();
  });
});

describe('stillAtWork', () => {
  const [shortest, longest] = WORKDAY_HOURS;

  it('is certain through the shortest working day, falls evenly to nothing at the longest', () => {
    const w = { from: at(8), last: at(9) };
    expect(stillAtWork(w, at(8 + shortest))).toBe(1);
    expect(stillAtWork(w, at(8 + (shortest + longest) / 2))).toBeCloseTo(0.5, 12);
    expect(stillAtWork(w, at(8 + longest))).toBe(0);
    expect(stillAtWork(w, at(23))).toBe(0);
  });

  it('counts the practice at work until its latest notification, and weighs only the hours after it', () => {
    const w = { from: at(8), last: at(8 + shortest + 1) };
    expect(stillAtWork(w, w.last)).toBe(1);
    // Closing equally likely over what is left of the range.
    expect(stillAtWork(w, at(8 + (shortest + 1 + longest) / 2))).toBeCloseTo(0.5, 12);
    expect(stillAtWork(w, at(8 + longest))).toBe(0);
  });

  it('past the longest working day, takes it to go on for up to as long again as it has worked', () => {
    // At work since 00:00 and still at 13:00 (a practice open round the clock): it may close as late as 02:00.
    const w = { from: at(0), last: at(longest + 1) };
    expect(closingRange(w)).toEqual({ from: w.last, to: w.last + (longest + 1) * HOUR });
    expect(stillAtWork(w, w.last + (longest + 1) * HOUR * 0.5)).toBeCloseTo(0.5, 12);
    expect(stillAtWork(w, w.last + (longest + 1) * HOUR)).toBe(0);
  });

  it('never rises as the hours go on', () => {
    const w = { from: at(7.5), last: at(16.2) };
    let before = 1;
    for (let t = at(7.5); t <= at(24); t += HOUR / 4) {
      const p = stillAtWork(w, t);
      expect(p).toBeLessThanOrEqual(before);
      expect(p).toBeGreaterThanOrEqual(0);
      before = p;
    }
  });
});

describe('notifiedRate', () => {
  it("reads a stream's rate from its run of notifications today, as of the instant the source was read", () => {
    const w = { from: at(8), last: at(12) };
    // Notifications in 80 minutes since 08:00, at noon: about 20 an hour, whatever the model said (2 an hour).
    expect(notifiedRate(reading('appointments', at(8), 80, at(12)), w, at(12), 2)).toBeCloseTo((80 + 0.5) / 4.25, 12);
    // A stream whose run began later is read over its own run.
    expect(notifiedRate(reading('orders', at(10), 20, at(12)), w, at(12), 2)).toBeCloseTo((20 + 0.5) / 2.25, 12);
  });

  it('leans on the model in the first minutes, and reads a stream with no run of its own as quiet since the day began', () => {
    const w = { from: at(8), last: at(8) };
    expect(notifiedRate(reading('appointments', at(8), 3, at(8)), w, at(8), 2)).toBeCloseTo((3 + 0.5) / 0.25, 12);
    expect(notifiedRate(undefined, w, at(10), 2)).toBeCloseTo(0.5 / 2.25, 12);
    // A lone notification in the night is not a run.
    expect(notifiedRate(reading('orders', at(2), 1, at(2)), w, at(10), 2)).toBeCloseTo(0.5 / 2.25, 12);
  });
});

describe('hoursShown', () => {
  const asOf = new Date(at(0));
  /** Four weeks of exposure in every slot of the week, and `changes(slot)` changes in it. */
  const model = (changes: (slot: number) => number): StoredSlot[] =>
    Array.from({ length: 168 }, (_, slot) => ({
      slot,
      changes: changes(slot),
      exposureHours: 4,
      recentChanges: 0,
      recentExposureHours: 0,
      asOf,
    }));
  const open = (slot: number) => slot % 24 >= 8 && slot % 24 < 19 && Math.floor(slot / 24) !== 0;

  it('sees the hours of a practice open 8-19 six days a week', () => {
    expect(
      hoursShown([
        hourOfDay(
          model((slot) => (open(slot) ? 40 : 0)),
          asOf,
        ),
      ]),
    ).toBe(true);
  });

  it('sees none in a history spread round the clock, however large', () => {
    expect(
      hoursShown([
        hourOfDay(
          model(() => 40),
          asOf,
        ),
      ]),
    ).toBe(false);
    // A first pass's few hundred records, one or two in some hours of the week and none in others: chance alone.
    let seed = 7;
    const draw = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 < 0.5 ? 0 : 1) + (seed % 5 === 0 ? 1 : 0);
    const few = Array.from({ length: 168 }, draw);
    expect(few.some((c) => c === 0) && few.some((c) => c >= 2)).toBe(true);
    expect(
      hoursShown([
        hourOfDay(
          model((slot) => few[slot]!),
          asOf,
        ),
      ]),
    ).toBe(false);
  });

  it('pools its streams: each too small to show the hours alone, together they do', () => {
    const stream = hourOfDay(
      model((slot) => (open(slot) && slot % 24 === 10 && Math.floor(slot / 24) === 2 ? 3 : 0)),
      asOf,
    );
    expect(hoursShown([stream])).toBe(false);
    expect(hoursShown(Array.from({ length: 10 }, () => stream))).toBe(true);
  });

  it("leaves today's weekday out: a first morning read does not show hours of its own", () => {
    // A flat first pass, and this Thursday's first hour read with 60 changes in it.
    const slots = model((slot) => (slot === 4 * 24 + 8 ? 60 : 1));
    expect(hoursShown([hourOfDay(slots, asOf)])).toBe(true);
    expect(hoursShown([hourOfDay(slots, asOf, 4)])).toBe(false);
  });
});

describe('atWorkSince: when a practice without webhooks was found at work by its checks', () => {
  const read = (since: number | null, day = DAY_START) => ({
    day: new Date(day),
    since: since === null ? null : new Date(since),
    found: 3,
  });

  it("is the earliest of its streams' first changes of today", () => {
    expect(atWorkSince([read(at(8.5)), read(at(8.2)), read(null), read(at(11))], DAY_START, at(12.5))).toBe(at(8.2));
  });

  it('is not found by yesterday, nor by what was read for another day, nor by what is later than now, nor by nothing', () => {
    expect(atWorkSince([read(at(-2))], DAY_START, at(4))).toBeNull();
    expect(atWorkSince([read(at(3), DAY_START - 24 * HOUR)], DAY_START, at(4))).toBeNull();
    expect(atWorkSince([read(at(9))], DAY_START, at(8))).toBeNull();
    expect(atWorkSince([read(null)], DAY_START, at(8))).toBeNull();
  });
});

describe('the longest working day of a practice found at work by its checks', () => {
  const window = (from: number, to: number, changes: number) => ({ from, to, changes });

  it('is seen at work until the end of the latest window of any stream that found a change, not one still to come', () => {
    const windows = [
      [window(at(8), at(8.5), 4), window(at(8.5), at(9), 0)],
      [window(at(8.2), at(10.25), 2), window(at(10.25), at(11), 0)],
      [window(at(11), at(13), 1)],
    ];
    expect(latestAtWork(windows, at(8.1), at(12))).toBe(at(10.25));
    expect(latestAtWork(windows, at(8.1), at(13))).toBe(at(13));
    expect(latestAtWork([], at(8.1), at(12))).toBe(at(8.1));
  });

  it('ends the longest working day after it was found at work, and goes on as long again once seen at work past it', () => {
    const longest = WORKDAY_HOURS[1];
    expect(longestDayEnd({ from: at(8), last: at(15) })).toBe(at(8 + longest));
    expect(longestDayEnd({ from: at(8), last: at(8 + longest) })).toBe(at(8 + 2 * longest));
    expect(longestDayEnd({ from: at(8), last: at(9 + longest) })).toBe(at(10 + 2 * longest));
  });
});
