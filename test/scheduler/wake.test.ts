/**
 * When a source's plan can next dispatch (src/scheduler/wake.ts). The wake
 * hands the decider the plan it made at the tick it returns, when that plan
 * dispatches, and the decider takes it instead of planning again: it must be
 * the plan viewAt makes there from the same readings. Otherwise it hands over
 * the search to resume at the next segment's first tick, from the plan made
 * at the tick before it.
 */
import { describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/schema.ts';
import { schedulesSchema } from '../../src/config/schedules.ts';
import { viewAt, type ModelReading, type SourceReadings, type SourceView } from '../../src/scheduler/observe.ts';
import type { ScheduledStream } from '../../src/scheduler/plan.ts';
import { dispatches, nextWake, segmentEnd, type WokenView } from '../../src/scheduler/wake.ts';
import { BUSY_PER_HOUR } from '../../src/scheduler/budget.ts';
import { evidenceOf, surprisesFound, WAKE_MIN_CHANGES, type WindowFound } from '../../src/scheduler/rates.ts';

const ZONE = 'America/New_York';
const MIDNIGHT = Date.parse('2026-11-19T05:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const settings = schedulesSchema.parse({});
const source = { kind: 'core', name: 'practice', timeZone: ZONE, lagSeconds: 120 } as unknown as SourceConfig;
/** Changes an hour in each stream's busy hours (8-18 local, weekdays), and a little outside them. */
const STREAMS: Array<[string, number]> = [
  ['appointments', 30],
  ['customers', 8],
  ['orders', 3],
  ['products', 0.2],
];
const streams: ScheduledStream[] = STREAMS.map(([resource], order) => ({
  key: `practice/${resource}`,
  source: 'practice',
  resource,
  kind: 'incremental',
  schedule: { mode: 'budget' },
  maxStalenessMinutes: null,
  order,
}));

function models(at: number): Map<string, ModelReading> {
  const out = new Map<string, ModelReading>();
  for (const [resource, perHour] of STREAMS) {
    const rates = new Float64Array(168);
    for (let d = 1; d < 6; d++) for (let h = 0; h < 24; h++) rates[d * 24 + h] = h >= 8 && h < 18 ? perHour : perHour / 50;
    out.set(resource, { at, today: 4, rates, movedIn: new Uint8Array(168) });
  }
  return out;
}

/**
 * What the decider would have read of the practice at `at`, its streams last checked at the given minutes before it.
 * With `readFor` (minutes, a stream each), each stream's last check is instead one window that long.
 */
function readings(at: number, checkedAgo: number[], found: number[], readFor?: number[]): SourceReadings {
  const rows = new Map();
  const states = new Map();
  const windows = new Map<string, WindowFound[]>();
  STREAMS.forEach(([resource], i) => {
    const last = new Date(at - checkedAgo[i]! * MINUTE);
    rows.set(resource, {
      resource,
      lastFireAt: last,
      lastFirePurpose: 'check',
      lastFireReason: 'rate',
      lastFireBy: 'test',
      lastDoneAt: last,
      lastCheckAt: last,
      lastOutcome: 'succeeded',
      notifiedUntil: null,
      pausedUntil: null,
      warning: null,
    });
    states.set(resource, { cursor: new Date(last.getTime() - 2 * MINUTE), open: false, pagesLeft: null });
    const to = last.getTime() - 2 * MINUTE;
    windows.set(
      resource,
      readFor
        ? [{ from: to - readFor[i]! * MINUTE, to, changes: found[i]! }]
        : [
            { from: last.getTime() - 40 * MINUTE, to, changes: found[i]! },
            { from: last.getTime() - 90 * MINUTE, to: last.getTime() - 40 * MINUTE, changes: Math.round(found[i]! / 2) },
          ],
    );
  });
  return {
    at: new Date(at),
    quota: {
      day: '2026-11-19',
      used: 40,
      byPurpose: { check: 40, backfill: 0, webhook: 0, resync: 0, full: 0 },
      dailyLimit: 1000,
      allowance: 1000,
      budget: 150,
      budgetUsed: 40,
      exhaustedUntil: null,
      startsAt: new Date(MIDNIGHT),
      resetsAt: new Date(MIDNIGHT + 24 * HOUR),
    },
    rows,
    states,
    notified: new Map(),
    found: new Map(STREAMS.map(([resource], i) => [resource, found[i]! * 3])),
    atWork: new Map(),
    windows,
    costs: new Map(),
    webhooksUntil: null,
    health: null,
  };
}

/** Numbers in [0, 1) drawn from `seed` (Park-Miller): the same practices on every run. */
function drawing(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
}

const plain = (view: SourceView) =>
  JSON.stringify({ plan: view.plan, input: view.input, cronFires: view.cronFires, pausedUntil: view.pausedUntil }, (_k, x: unknown) =>
    x instanceof Float64Array || x instanceof Uint8Array ? Array.from(x) : x,
  );

/**
 * The wakes the decider follows from `now` with the readings fixed, as it does: a wake that hands over a search to
 * resume is resumed at its tick, until a wake hands over a plan that dispatches (or `limit` passes). Checks each
 * handover against viewAt: the plan handed over is the one made at its tick, and a search to resume starts from the
 * plan made at the tick before it, which does not dispatch. Returns the wakes' ticks, the last the one that dispatches
 * (null when none did before `limit`).
 */
function follow(
  now: number,
  r: SourceReadings,
  m: Map<string, ModelReading>,
  limit: number,
): { wakes: number[]; dispatching: number | null } {
  const tick = settings.tickSeconds * 1000;
  const inFlight = new Set<string>();
  const first = viewAt(source, streams, r, m, new Date(now), inFlight, settings);
  let base: SourceView = first;
  let resumed = false;
  let fires = first.nextFires.values();
  const wakes: number[] = [];
  for (let t = now; t < limit;) {
    let woken: WokenView | null = null;
    const at = nextWake(
      { source, streams, readings: r, models: m, inFlight, settings, now: new Date(t) },
      fires,
      undefined,
      base,
      (found) => {
        woken = found;
      },
      resumed,
    );
    wakes.push(at);
    expect(at).toBeGreaterThanOrEqual(resumed ? t : t + tick);
    const w = woken as WokenView | null;
    expect(w?.at).toBe(at);
    if (w && 'view' in w) {
      expect(dispatches(w.view)).toBe(true);
      expect(plain(w.view)).toBe(plain(viewAt(source, streams, r, m, new Date(at), inFlight, settings)));
      return { wakes, dispatching: at };
    }
    if (!w) return { wakes, dispatching: null };
    expect(dispatches(w.resume)).toBe(false);
    expect(plain(w.resume)).toBe(plain(viewAt(source, streams, r, m, new Date(at - tick), inFlight, settings)));
    base = w.resume;
    fires = w.resume.nextFires.values();
    resumed = true;
    t = at;
  }
  return { wakes, dispatching: null };
}

describe('the wake', () => {
  it('hands over the plan it made at the tick it returns, or the search to resume there', () => {
    let handed = 0;
    let resumes = 0;
    const random = drawing(11);
    for (let i = 0; i < 200; i++) {
      const now = MIDNIGHT + 6 * HOUR + Math.floor(random() * 16 * 4 * 60) * 15_000;
      const r = readings(
        now,
        // Checked a few minutes ago: the next check is some ticks away.
        STREAMS.map(() => 1 + Math.floor(random() * 6)),
        STREAMS.map(([, perHour]) => Math.round(perHour * random())),
      );
      const m = models(now);
      if (dispatches(viewAt(source, streams, r, m, new Date(now), new Set(), settings))) continue;
      const { wakes, dispatching } = follow(now, r, m, now + 3 * HOUR);
      if (dispatching !== null) handed++;
      resumes += wakes.length - 1;
    }
    expect(handed).toBeGreaterThan(10);
    expect(resumes).toBeGreaterThan(10);
  });

  /**
   * Plans every tick from `now` up to the tick the wakes followed from it dispatch at and checks that none before it
   * dispatches; false when the plan at `now` dispatches already (nothing to check).
   */
  function wakesNoLaterThanPlanning(now: number, r: ReturnType<typeof readings>): boolean {
    const tick = settings.tickSeconds * 1000;
    const m = models(now);
    const inFlight = new Set<string>();
    if (dispatches(viewAt(source, streams, r, m, new Date(now), inFlight, settings))) return false;
    const limit = now + 3 * HOUR;
    const { wakes, dispatching } = follow(now, r, m, limit);
    const until = dispatching ?? wakes[wakes.length - 1]!;
    for (let t = now + tick; t < until; t += tick) {
      expect(dispatches(viewAt(source, streams, r, m, new Date(t), inFlight, settings)), new Date(t).toISOString()).toBe(false);
    }
    return true;
  }

  /**
   * 150 practices at random ticks of 7:00-19:00, their streams checked 1-8 minutes before, each followed from wake to
   * wake and planned at every tick in between (wakesNoLaterThanPlanning): how many were followed.
   */
  function followRandom(
    seed: number,
    found: (random: () => number, perHour: number) => number,
    readFor?: (random: () => number) => number,
  ): number {
    const random = drawing(seed);
    let checked = 0;
    for (let i = 0; i < 150; i++) {
      const now = MIDNIGHT + 7 * HOUR + Math.floor(random() * 12 * 4 * 60) * 15_000;
      const r = readings(
        now,
        STREAMS.map(() => 1 + Math.floor(random() * 8)),
        STREAMS.map(([, perHour]) => found(random, perHour)),
        readFor && STREAMS.map(() => readFor(random)),
      );
      if (wakesNoLaterThanPlanning(now, r)) checked++;
    }
    return checked;
  }

  it('wakes at the first tick whose plan dispatches, resuming at each segment: planning every tick finds nothing earlier', () => {
    // Windows of every size, a stream's last one and earlier ones: the segment ends only where a window leaving a
    // lookback changes what the plan reads (segmentEnd), and no tick before the wake may dispatch.
    expect(followRandom(23, (random, perHour) => Math.round(perHour * random() * 1.5))).toBeGreaterThan(20);
  });

  it('wakes no later than planning every tick after long checks that found the practice busier than forecast', () => {
    // Checks that read hours each, some finding more than the forecast: the practice's excess raises the other streams'
    // rates. Were it read at each instant, it would move with the clock as the windows leave the last hour, and a stream
    // due at one tick could be not due at the next, which the wake's search does not expect.
    const found = (random: () => number, perHour: number) => 2 + Math.round(perHour * random());
    expect(followRandom(37, found, (random) => 60 + Math.floor(random() * 300))).toBeGreaterThan(20);
  });

  it('wakes no later than planning every tick where webhooks are registered and the budget is nearly spent', () => {
    // With webhooks registered a minute without a notification is a minute without changes, so today's activity falls
    // as the day goes by without them. Read up to each instant, it fell between two ticks of a segment: a stream's
    // busy hour ended there, the common interval let it go, and a stream due by the interval at one tick was not at
    // the segment's last. Near the end of the busy hours, with the budget nearly spent (the interval is what makes a
    // check due), activities near what keeps an hour busy. Read up to the source's last reading, none is missed.
    const random = drawing(5);
    let checked = 0;
    for (let i = 0; i < 400; i++) {
      const now = MIDNIGHT + 15 * HOUR + Math.floor(random() * 3 * 60 * 4) * 15_000;
      const r = readings(
        now,
        STREAMS.map(() => 5 + Math.floor(random() * 60)),
        STREAMS.map(() => 1),
      );
      r.webhooksUntil = Number.POSITIVE_INFINITY;
      const used = 120 + Math.floor(random() * 28);
      r.quota = { ...r.quota, used, budgetUsed: used, byPurpose: { ...r.quota.byPurpose, check: used } };
      r.found = new Map(
        STREAMS.map(([resource, perHour]) => {
          const expected = (8 * perHour) / 50 + ((now - MIDNIGHT - 8 * HOUR) / HOUR) * perHour;
          const activity = (BUSY_PER_HOUR / perHour) * (0.85 + 0.3 * random());
          return [resource, Math.max(0, Math.round(activity * (expected + 3) - 3))];
        }),
      );
      if (wakesNoLaterThanPlanning(now, r)) checked++;
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('ends a segment where a window read as two leaves the evidence in part, not where a too small surprise would', () => {
    // One stream, one check: four quiet hours, then changes from its first at 13:10 local to its end at 14:00. Evidence
    // reads it as two windows (rates.ts, splitAtFirstChange), and the quiet part leaves the six hours' lookback at
    // 19:10, fifty minutes before the whole window would: the evidence read changes there.
    const first = MIDNIGHT + 13 * HOUR + 10 * MINUTE;
    const window: WindowFound = { from: MIDNIGHT + 9 * HOUR, to: MIDNIGHT + 14 * HOUR, changes: 12, firstChangeAt: first };
    const leaves = first + 6 * HOUR;
    const rates = models(MIDNIGHT).get('appointments')!.rates;
    expect(evidenceOf(rates, ZONE, [window], leaves)).not.toEqual(evidenceOf(rates, ZONE, [window], leaves + 1));
    const r = readings(MIDNIGHT + 14 * HOUR, [1, 600, 600, 600], [0, 0, 0, 0]);
    r.windows = new Map([['appointments', [window]]]);
    const w = {
      source,
      streams,
      readings: r,
      models: models(MIDNIGHT),
      inFlight: new Set<string>(),
      settings,
      now: new Date(MIDNIGHT + 19 * HOUR),
    };
    expect(segmentEnd(w, MIDNIGHT + 19 * HOUR, MIDNIGHT + 20 * HOUR)).toBe(leaves);

    // A window that found fewer than WAKE_MIN_CHANGES is never a surprise, so its leaving the surprises' lookback
    // (three hours after its end, here 17:20) changes nothing the plan reads and ends no segment; one that found as
    // many may be, and does.
    const streamsOf = (changes: number) => [
      {
        resource: 'appointments',
        forecast: new Float64Array(168),
        windows: [{ ...window, changes, firstChangeAt: undefined }],
        usualPerWeek: 1,
      },
    ];
    const fewer = { from: MIDNIGHT + 13 * HOUR, to: MIDNIGHT + 14 * HOUR + 20 * MINUTE, changes: WAKE_MIN_CHANGES - 1 };
    const enough = { ...fewer, changes: WAKE_MIN_CHANGES };
    expect(surprisesFound(streamsOf(WAKE_MIN_CHANGES - 1), ZONE, MIDNIGHT + 15 * HOUR).size).toBe(0);
    expect(surprisesFound(streamsOf(WAKE_MIN_CHANGES), ZONE, MIDNIGHT + 15 * HOUR).size).toBe(1);
    const at = (win: WindowFound) => {
      r.windows = new Map([['appointments', [win]]]);
      return segmentEnd({ ...w, readings: r }, MIDNIGHT + 17 * HOUR + 5 * MINUTE, MIDNIGHT + 17 * HOUR + 50 * MINUTE);
    };
    expect(at(fewer)).toBe(MIDNIGHT + 17 * HOUR + 50 * MINUTE);
    expect(at(enough)).toBe(MIDNIGHT + 17 * HOUR + 20 * MINUTE);
  });

  it("in the sweep's last minutes, wakes at the first tick whose plan dispatches: planning every tick finds nothing earlier", () => {
    // Streams checked before the sweep started with few changes expected since, or since it started: the wake may skip
    // to the reset only when no tick of the sweep would check one.
    const random = drawing(29);
    const resets = MIDNIGHT + 24 * HOUR;
    let checked = 0;
    for (let i = 0; i < 200; i++) {
      const now = resets - 30 * MINUTE + Math.floor(random() * 28 * 4) * 15_000;
      const r = readings(
        now,
        STREAMS.map(() => 1 + Math.floor(random() * 60)),
        STREAMS.map(() => Math.floor(random() * 3)),
      );
      if (wakesNoLaterThanPlanning(now, r)) checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe("today's activity of a polled stream", () => {
  it('is read from what its checks read, not from the minutes since: unread, they are not minutes without changes', () => {
    // Its streams were checked at 8:02 (read up to 8:00, the lag of two minutes) and found nothing of the morning yet.
    // Taken up to now, each minute after it counted as one without changes, and the busiest stream's activity fell
    // by the minute until it was forecast too quiet to check: 0.23 at 8:10, 0.08 by 9:30. (Read up to 8:00, it is
    // 0.38: this model expects a few changes in the night.)
    const r = readings(MIDNIGHT + 8 * HOUR + 10 * MINUTE, [8, 8, 8, 8], [0, 0, 0, 0]);
    const activity = (at: number) =>
      viewAt(source, streams, r, models(MIDNIGHT), new Date(at), new Set(), settings).inputs.get('appointments')!.activity;
    const early = activity(MIDNIGHT + 8 * HOUR + 10 * MINUTE);
    expect(early).toBeGreaterThan(0.3);
    expect(activity(MIDNIGHT + 9 * HOUR + 30 * MINUTE)).toBe(early);
  });
});

describe("the practice's excess", () => {
  it('is read as of the latest check, so a source read later (by a replica after the hour, or by status) plans the same', () => {
    // Appointments found 60 changes in its last 40 minutes against a forecast of 20: the practice is busier than
    // forecast, and orders, checked an hour ago, takes a share of it. Read 10 or 45 minutes after that check (a replica
    // reads a source again at least hourly, status whenever asked), the hour before the reading held a different part
    // of those windows: the excess moved with the instant of reading alone, and so did orders' next check.
    const checked = MIDNIGHT + 11 * HOUR;
    const soon = readings(checked + 10 * MINUTE, [10, 10, 60, 300], [60, 4, 1, 0]);
    const later: SourceReadings = { ...soon, at: new Date(checked + 45 * MINUTE) };
    const now = new Date(checked + 50 * MINUTE);
    const orders = (r: SourceReadings) => viewAt(source, streams, r, models(MIDNIGHT), now, new Set(), settings).inputs.get('orders')!;
    expect(orders(soon).practiceExcessPerHour).toBeGreaterThan(0);
    expect(orders(later).practiceExcessPerHour).toBe(orders(soon).practiceExcessPerHour);
    expect(plain(viewAt(source, streams, later, models(MIDNIGHT), now, new Set(), settings))).toBe(
      plain(viewAt(source, streams, soon, models(MIDNIGHT), now, new Set(), settings)),
    );
  });
});
