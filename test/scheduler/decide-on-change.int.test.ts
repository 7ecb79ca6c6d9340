/**
 * The decider plans a source only when something it is planned from changed
 * or when its plan can next dispatch (src/scheduler/wake.ts), and its
 * decisions are those of planning every source at every tick: the same day
 * played both ways, on the injected clock against the real simulator,
 * PostgreSQL and run queue, dispatches the same runs at the same ticks for the
 * same reasons, while planning far fewer times.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DayRig, type RigOptions } from '../../bench/support/day-rig.ts';
import { EVENING_DAY, REFERENCE_DAY, type DayPattern } from '../../simulator/day.ts';
import { VIEW_KEPT_MS, type DecideStats } from '../../src/scheduler/scheduler.ts';
import { sourceViews } from '../../src/status/views.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { scaled } from '../support/time-scale.ts';
import { PRACTICE_SIZES } from './support/held-out.ts';

const DAY_TIMEOUT = { timeout: scaled(900_000) };
const DATE = '2026-11-19';
const ZONE = 'America/New_York';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Played {
  dispatches: string[];
  /** Plans made: at the ticks planned, and at later instants to find the next one. */
  plans: number;
  read: number;
  ticks: number;
}

/** A practice with two weeks of the reference day behind it, its first passes done, at the start of the day. */
async function preparedRig(options: Partial<RigOptions> = {}): Promise<DayRig> {
  const db: TestDatabase = await createTestDatabase({ migrate: false });
  cleanups.push(() => db.drop());
  const rig = await DayRig.start({
    databaseUrl: db.url,
    date: DATE,
    timeZone: ZONE,
    sizes: PRACTICE_SIZES,
    historyDays: 14,
    historyPattern: REFERENCE_DAY,
    tickSeconds: 60,
    webhooks: false,
    ...options,
  });
  cleanups.push(() => rig.close());
  await rig.prepare();
  return rig;
}

async function play(day: DayPattern, options: Partial<RigOptions>): Promise<Played> {
  const stats: DecideStats[] = [];
  const rig = await preparedRig(options);
  rig.serve.scheduler.onDecide = (s) => stats.push(s);
  const report = await rig.playDay(day);
  return {
    dispatches: report.dispatches.map((j) => `${j.firedAt} ${j.resource} ${j.purpose} ${j.reason} ${j.mustInclude ?? ''}`),
    plans: stats.reduce((n, s) => n + s.planned - s.resumed + s.probes, 0),
    read: stats.reduce((n, s) => n + s.read, 0),
    ticks: stats.length,
  };
}

/** Where two lists of dispatches first differ, with the three before it; null when they are the same. */
function firstDifference(onChange: readonly string[], every: readonly string[]): string | null {
  const n = Math.max(onChange.length, every.length);
  for (let i = 0; i < n; i++) {
    if (onChange[i] === every[i]) continue;
    const before = every.slice(Math.max(0, i - 3), i).join(' | ');
    return `dispatch ${i} of ${onChange.length} / ${every.length}: on change "${onChange[i] ?? '(none)'}", every tick "${every[i] ?? '(none)'}", after: ${before}`;
  }
  return null;
}

describe('deciding when a plan can change', () => {
  // With webhooks, each tick that brings a notification changes what the source is planned from: it is read and
  // planned again then. Without, only its own checks do, and most ticks plan nothing.
  // A new practice (no history) with webhooks reads its day from its notifications (observe.ts, workdayOf): its
  // forecasts move with the clock between them.
  for (const [name, day, webhooks, share, historyDays, hours] of [
    ['the reference day, with webhooks', REFERENCE_DAY, true, 1, 14, null],
    ['an evening rush, without webhooks', EVENING_DAY, false, 0.5, 14, null],
    ["a new practice's first day, with webhooks", REFERENCE_DAY, true, 1, 0, null],
    ['a new practice opening at 18:00, with webhooks', EVENING_DAY, true, 1, 0, null],
    // Without webhooks, a new practice's streams take turns to explore it, and its rates are read from when its checks
    // found it at work (observe.ts, atWorkSince): they move with the clock too.
    ["a new practice's first day, without webhooks", REFERENCE_DAY, false, 0.5, 0, null],
    // Told its hours, its rates are read from its checks since its stated opening (here at a quarter to the hour, so
    // no slot edge marks it), and it is looked at once ten minutes after (hours.ts, OPENING_LOOK_MINUTES).
    ["a new practice's first day, its hours stated, without webhooks", REFERENCE_DAY, false, 0.5, 0, ['Mon-Sat 07:45-19:00']],
  ] as const) {
    it(`dispatches what planning at every tick dispatches: ${name}`, DAY_TIMEOUT, async () => {
      const source = hours ? { source: { hours } } : {};
      const every = await play(day, { webhooks, historyDays, planEveryTick: true, ...source });
      const onChange = await play(day, { webhooks, historyDays, ...source });
      expect(onChange.dispatches.length).toBeGreaterThan(50);
      // The first dispatch that differs, with the ones before it, says where the two plays parted.
      expect(firstDifference(onChange.dispatches, every.dispatches)).toBeNull();
      expect(onChange.dispatches).toEqual(every.dispatches);
      // Planning every tick plans the one source once a tick; on change, fewer times, probes for the next one included.
      expect(every.plans).toBe(every.ticks);
      expect(onChange.plans).toBeLessThan(every.plans * share);
      // Sources are read again when they changed, and at least hourly: planned every tick, the hourly read comes on the
      // hour; on change, at the next tick the source is looked at. Never more reads than planning every tick.
      expect(onChange.read).toBeLessThanOrEqual(every.read);
    });
  }

  it('keeps the last plan of a source a minute, and status then observes it afresh', DAY_TIMEOUT, async () => {
    const rig = await preparedRig();
    const source = rig.config.sources[0]!.name;
    const planned: number[] = [];
    rig.serve.scheduler.onDecide = (s) => {
      if (s.planned - s.resumed > 0) planned.push(rig.clock.ms);
    };
    // Ticks of a morning: the source is planned at those it dispatches at (read again after its runs, it is only
    // probed for the next one), and at most ticks nothing of it changes.
    let quietTicks = 0;
    for (let t = rig.dayStart + 8 * 3_600_000; t < rig.dayStart + 10 * 3_600_000; t += 60_000) {
      rig.clock.set(t);
      await rig.tick();
      const kept = rig.serve.scheduler.view(source);
      const lastPlanned = planned.at(-1);
      if (lastPlanned !== undefined && t - lastPlanned < VIEW_KEPT_MS) expect(kept?.at.getTime()).toBe(lastPlanned);
      else {
        expect(kept).toBeUndefined();
        quietTicks++;
      }
    }
    expect(planned.length).toBeGreaterThan(0);
    expect(quietTicks).toBeGreaterThan(60);
    // What status reads: the plan of now, observed from state, whether or not the scheduler kept one.
    const [view] = await sourceViews(rig.app, rig.config, rig.serve.scheduler);
    expect(view!.source).toBe(source);
    expect(view!.at.getTime()).toBe(rig.clock.ms);
    expect(view!.plan.streams.length).toBeGreaterThan(0);
  });
});
