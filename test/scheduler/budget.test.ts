/**
 * The budget planner: what is due now, and what the rest of the quota day is
 * planned to cost. Pure, so each case states its inputs exactly.
 */
import { describe, expect, it } from 'vitest';
import {
  EXPLORE_MAX_HOURS,
  EXPLORE_MIN_HOURS,
  exploreBound,
  fallingRoot,
  HELD_FOR_CLOSINGS,
  INTERVAL_SEARCH,
  MU_PRECISION,
  MU_SEARCH,
  NO_NOTIFICATIONS,
  nextCheck,
  planSource,
  pollInterval,
  SLACK_FACTOR,
  SLACK_SHARE,
  slackSlots,
  stalenessBound,
  type SourceInput,
  type StreamInput,
} from '../../src/scheduler/budget.ts';
import { SLOTS } from '../../src/state/change-model.ts';

const NOW = new Date('2026-11-23T10:00:00Z'); // a Monday
const MIN = 60_000;
const ago = (minutes: number) => new Date(NOW.getTime() - minutes * MIN);
/** Open 8-19 at `perHour`, closed otherwise. */
const openHours = (perHour: number) => Float64Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? perHour : 0.001));
const flat = (perHour: number) => new Float64Array(SLOTS).fill(perHour);

function stream(resource: string, over: Partial<StreamInput> = {}): StreamInput {
  return {
    resource,
    kind: 'incremental',
    backfill: false,
    backfillPagesLeft: null,
    inFlight: false,
    pausedUntil: null,
    lastCheckAt: ago(1),
    cost: 1,
    rates: flat(0.001),
    webhookFed: false,
    notified: NO_NOTIFICATIONS,
    maxStalenessMinutes: null,
    ...over,
  };
}

function source(streams: StreamInput[], over: Partial<SourceInput> = {}): SourceInput {
  return {
    now: NOW,
    timeZone: 'UTC',
    resetsAt: new Date('2026-11-24T00:00:00Z'),
    budget: 150,
    budgetUsed: 0,
    backfillLeft: 700,
    streams,
    pinned: [],
    settings: { debounceSeconds: 60, notifiedWithinMinutes: 10, safetyNetMinutes: 360, floorHours: 24, tickSeconds: 15 },
    ...over,
  };
}

const due = (input: SourceInput) =>
  Object.fromEntries(planSource(input).streams.map((s) => [s.resource, s.due ? `${s.due.purpose}/${s.due.reason}` : null]));
const total = (p: ReturnType<typeof planSource>) => p.planned.check + p.planned.webhook + p.planned.full;

describe('the exchange rate', () => {
  it('plans the rest of the day within the budget left, keeping a margin for chance', () => {
    const plan = planSource(
      source([
        stream('appointments', { rates: openHours(30) }),
        stream('customers', { rates: openHours(8) }),
        stream('memberships', { rates: openHours(1) }),
      ]),
    );
    expect(plan.reserve).toBe(Math.ceil(Math.sqrt(150) + 15));
    // The common interval of the tail rule holds back only the spread of chance, released as the day's
    // expected changes go by (at 10:00, 9 of the 11 busy hours are to come).
    expect(total(plan)).toBeLessThanOrEqual(150 - Math.ceil((Math.sqrt(150) * 9) / 11) + 1);
    expect(total(plan)).toBeGreaterThan(100);
    const tighter = planSource(source([stream('appointments', { rates: openHours(30) })], { budgetUsed: 120 }));
    expect(total(tighter)).toBeLessThanOrEqual(30);
    // Less left spaces the checks wider.
    expect(tighter.intervalMinutes!).toBeGreaterThan(plan.intervalMinutes!);
  });

  it('gives a stream changing four times as often twice the checks, not four times (square-root allocation)', () => {
    expect(pollInterval(100, 4 / 60, 1, null) * 2).toBeCloseTo(pollInterval(100, 1 / 60, 1, null), 9);
    // Streams below one change an hour have no busy hours: the exchange rate alone spaces them.
    const plan = planSource(source([stream('busy', { rates: flat(0.8) }), stream('moderate', { rates: flat(0.2) })], { budget: 12 }));
    expect(plan.intervalMinutes).toBeNull();
    const [busy, moderate] = plan.streams.map((s) => s.expectedChecks);
    expect(busy! / moderate!).toBeGreaterThan(1.8);
    expect(busy! / moderate!).toBeLessThan(2.2);
  });

  it('never plans more than about one check per expected change, however large the budget', () => {
    const plan = planSource(source([stream('orders', { rates: flat(2) })], { budget: 100_000 }));
    expect(plan.mu).toBe(0);
    expect(plan.streams[0]!.expectedChecks).toBeLessThanOrEqual(2 * 14 + 1);
    expect(pollInterval(0, 2 / 60, 1, null)).toBeCloseTo(30, 6);
  });

  it('spends almost nothing on a day with no changes: each stream once, at its floor', () => {
    const quiet = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((r) => stream(r, { lastCheckAt: ago(60) }));
    const plan = planSource(source(quiet, { now: NOW, resetsAt: new Date(NOW.getTime() + 24 * 3_600_000) }));
    expect(total(plan)).toBe(7);
    expect(Object.values(due(source(quiet))).every((d) => d === null)).toBe(true);
  });
});

describe('when a stream is due', () => {
  it('checks a polled stream once its expected changes are worth a request, and a quiet one only at its floor', () => {
    const input = source([stream('busy', { rates: flat(30), lastCheckAt: ago(20) }), stream('quiet', { lastCheckAt: ago(23 * 60) })]);
    expect(due(input)).toEqual({ busy: 'check/rate', quiet: null });
    expect(due(source([stream('quiet', { lastCheckAt: ago(24 * 60) })]))).toEqual({ quiet: 'check/floor' });
    expect(due(source([stream('new', { lastCheckAt: null })]))).toEqual({ new: 'check/floor' });
  });

  it('reads full-refresh streams as full passes, and backfills first, from the allowance', () => {
    const input = source([stream('catalog', { kind: 'full', lastCheckAt: ago(24 * 60) }), stream('history', { backfill: true })], {
      budgetUsed: 150,
    });
    expect(due(input)).toEqual({ catalog: null, history: 'backfill/backfill' });
    expect(due(source([stream('catalog', { kind: 'full', lastCheckAt: ago(24 * 60) })]))).toEqual({ catalog: 'full/floor' });
    expect(due(source([stream('history', { backfill: true })], { backfillLeft: 0 }))).toEqual({ history: null });
  });

  it('never dispatches a stream in flight or held until the quota resets', () => {
    const input = source([
      stream('a', { inFlight: true, lastCheckAt: null }),
      stream('b', { pausedUntil: new Date(NOW.getTime() + MIN), lastCheckAt: null }),
    ]);
    expect(due(input)).toEqual({ a: null, b: null });
    expect(planSource(input).streams.map((s) => s.waiting)).toEqual(['running', expect.stringMatching(/^held until/)]);
  });

  it('honours a freshness target in the hours the stream changes, and only there', () => {
    const stream10 = (lastCheck: number, now = NOW) =>
      source([stream('orders', { rates: openHours(2), maxStalenessMinutes: 10, lastCheckAt: new Date(now.getTime() - lastCheck * MIN) })], {
        now,
      });
    expect(due(stream10(10))).toEqual({ orders: 'check/max-staleness' });
    expect(due(stream10(5))).toEqual({ orders: null });
    const night = new Date('2026-11-23T03:00:00Z');
    expect(due(stream10(120, night))).toEqual({ orders: null });
  });

  it('stretches freshness targets together, in coarse steps, when the budget cannot carry them, and says how far', () => {
    const plan = planSource(
      source(
        [
          stream('appointments', { rates: openHours(30), maxStalenessMinutes: 2 }),
          stream('orders', { rates: openHours(4), maxStalenessMinutes: 10 }),
        ],
        { budget: 50 },
      ),
    );
    expect(plan.stretch).toBeGreaterThan(1);
    expect(plan.warnings.map((w) => w.message)).toEqual([
      expect.stringMatching(
        /^appointments is checked at least every \d+ min in its busy hours instead of every 2 min \(maxStalenessMinutes\): the budget of 50 requests a day cannot carry more today$/,
      ),
      expect.stringMatching(/^orders is checked at least every [\d.]+ (min|h) in its busy hours instead of every 10 min/),
    ]);
    expect(plan.streams.map((s) => s.targetHonoured)).toEqual([false, false]);
    expect(total(plan)).toBeLessThanOrEqual(50);
    // The same plan a little later says the same thing: warnings change only with the step.
    const later = planSource(
      source(
        [
          stream('appointments', { rates: openHours(30), maxStalenessMinutes: 2 }),
          stream('orders', { rates: openHours(4), maxStalenessMinutes: 10 }),
        ],
        { budget: 50, budgetUsed: 1 },
      ),
    );
    expect(later.warnings).toEqual(plan.warnings);
    expect(planSource(source([stream('appointments', { rates: openHours(30), maxStalenessMinutes: 20 })])).warnings).toEqual([]);
  });

  it('leaves only backfills once the budget is spent', () => {
    const input = source([stream('busy', { rates: flat(60), lastCheckAt: ago(120) }), stream('history', { backfill: true })], {
      budgetUsed: 150,
    });
    expect(due(input)).toEqual({ busy: null, history: 'backfill/backfill' });
    expect(planSource(input).streams[0]!.waiting).toMatch(/budget is used up/);
  });
});

describe('webhook notifications', () => {
  const notified = (count: number, oldestMinutes: number, latest = NOW) => ({
    count,
    oldest: ago(oldestMinutes),
    ageMinutes: (count * oldestMinutes) / 2,
    latestEvent: latest,
  });
  const fed = (over: Partial<StreamInput>) =>
    stream('appointments', { webhookFed: true, rates: openHours(20), lastCheckAt: ago(30), ...over });

  it('waits at least the debounce after a notification, so a burst is read by one check', () => {
    expect(due(source([fed({ notified: { ...notified(40, 0.5), ageMinutes: 20 } })]))).toEqual({ appointments: null });
  });

  it('checks once notifications have aged enough to be worth a request, reaching the latest notified change', () => {
    const input = source([fed({ notified: { count: 30, oldest: ago(4), ageMinutes: 60, latestEvent: ago(0.2) } })]);
    const plan = planSource(input);
    expect(plan.streams[0]!.due).toEqual({ purpose: 'webhook', reason: 'notified', mustInclude: ago(0.2) });
  });

  it('reads a notified change right after the debounce on a generous budget, and within notifiedWithinMinutes (less a tick) on a tight one', () => {
    expect(due(source([fed({ notified: notified(1, 1.5) })], { budget: 100_000 }))).toEqual({ appointments: 'webhook/notified' });
    expect(
      due(source([fed({ notified: { count: 1, oldest: ago(9.7), ageMinutes: 9.7, latestEvent: ago(9.7) } })], { budgetUsed: 100 })),
    ).toEqual({ appointments: null });
    const tight = source([fed({ notified: { count: 1, oldest: ago(9.76), ageMinutes: 9.76, latestEvent: ago(9.76) } })], {
      budgetUsed: 100,
    });
    expect(due(tight)).toEqual({ appointments: 'webhook/notified-max-wait' });
  });

  it('checks a webhook-fed stream with nothing notified only at its safety net', () => {
    expect(due(source([fed({ lastCheckAt: ago(300) })]))).toEqual({ appointments: null });
    expect(due(source([fed({ lastCheckAt: ago(360) })]))).toEqual({ appointments: 'check/safety-net' });
  });

  it('plans fewer requests for notified changes than for polling the same stream to the same freshness', () => {
    const withHooks = planSource(source([fed({ maxStalenessMinutes: 10 })], { budget: 1000 }));
    const polled = planSource(source([stream('appointments', { rates: openHours(20), maxStalenessMinutes: 10 })], { budget: 1000 }));
    expect(total(withHooks)).toBeLessThan(total(polled));
  });
});

describe('the next check, as status estimates it', () => {
  const next = (input: SourceInput, resource: string) => nextCheck(input, planSource(input), resource);
  const near = (actual: Date | undefined, expected: number) =>
    expect(Math.abs((actual?.getTime() ?? 0) - expected)).toBeLessThanOrEqual(MIN);

  it("for a busy stream, is when its unread changes become worth a request at today's exchange rate", () => {
    const input = source([stream('appointments', { rates: flat(12), lastCheckAt: NOW }), stream('customers', { rates: flat(3) })]);
    const plan = planSource(input);
    const n = nextCheck(input, plan, 'appointments');
    // Changes at λ a minute since the last check age λT²/2: the rule fires at T = sqrt(2 mu cost / λ), once T ≥ cost / λ.
    const perMinute = 12 / 60;
    const t = Math.max(Math.sqrt((2 * plan.mu) / perMinute), 1 / perMinute);
    expect(n?.reason).toBe('rate');
    near(n?.at, NOW.getTime() + t * MIN);
  });

  it('for a quiet stream, is its floor', () => {
    const n = next(source([stream('companies', { lastCheckAt: ago(60) })]), 'companies');
    expect(n?.reason).toBe('floor');
    // 24 h after the last check, less the tick the scheduler looks ahead.
    near(n?.at, NOW.getTime() - 60 * MIN + 24 * 60 * MIN - 15_000);
  });

  it('for a target that applies in busy hours only, is the next opening hour', () => {
    const evening = new Date('2026-11-23T20:00:00Z');
    const input = source(
      [stream('orders', { rates: openHours(2), lastCheckAt: new Date('2026-11-23T19:00:00Z'), maxStalenessMinutes: 30 })],
      {
        now: evening,
      },
    );
    const n = next(input, 'orders');
    expect(n?.reason).toBe('max-staleness');
    near(n?.at, Date.parse('2026-11-24T08:00:00Z'));
  });

  it('is now when it is due, the reset when the budget is spent, and unknown while it runs', () => {
    expect(next(source([stream('customers', { lastCheckAt: null })]), 'customers')).toEqual({ at: NOW, reason: 'floor' });
    expect(next(source([stream('customers')], { budgetUsed: 150 }), 'customers')).toEqual({
      at: new Date('2026-11-24T00:00:00Z'),
      reason: 'budget',
    });
    expect(next(source([stream('customers', { inFlight: true })]), 'customers')).toBeNull();
    expect(next(source([stream('customers')]), 'nothing')).toBeNull();
  });
});

describe("today's evidence", () => {
  it('brings a check forward when what recent checks found raises the rate above the forecast, and says so', () => {
    const forecast = openHours(0.001);
    // Evening: the model expects nothing, the last check found a rush.
    const evening = new Date('2026-11-23T19:30:00Z');
    const rush = forecast.map((r) => r + 60);
    const input = (rates: Float64Array) =>
      source([stream('appointments', { rates, forecastRates: forecast, lastCheckAt: new Date(evening.getTime() - 5 * MIN) })], {
        now: evening,
      });
    expect(due(input(rush))).toEqual({ appointments: 'check/evidence' });
    expect(due(input(forecast))).toEqual({ appointments: null });
  });

  it('prices the rest of the evening by the evidence: notified checks are paced, not read one by one', () => {
    const evening = new Date('2026-11-23T19:00:00Z');
    const fedAt = (rates: Float64Array) =>
      stream('appointments', {
        webhookFed: true,
        rates,
        lastCheckAt: new Date(evening.getTime() - 5 * MIN),
        notified: { count: 1, oldest: new Date(evening.getTime() - 1.5 * MIN), ageMinutes: 1.5, latestEvent: evening },
      });
    const closed = openHours(0.001);
    const rush = closed.map((r, slot) => (slot % 24 >= 19 && slot % 24 < 22 ? r + 120 : r));
    const blind = planSource(source([fedAt(closed)], { now: evening, budgetUsed: 60 }));
    const paced = planSource(source([fedAt(rush)], { now: evening, budgetUsed: 60 }));
    // Priced against a plan that expects nothing more, the notification is read at once...
    expect(blind.streams[0]!.due?.reason).toBe('notified');
    // ...priced against the rush to come, the check waits for more notifications, within the bound.
    expect(paced.mu).toBeGreaterThan(0);
    expect(paced.streams[0]!.due).toBeNull();
    expect(total(paced)).toBeLessThanOrEqual(90);
    expect(total(paced)).toBeGreaterThan(30);
  });

  it('never prices notifications already waiting as nothing', () => {
    const night = new Date('2026-11-23T21:00:00Z');
    const fed = (count: number) =>
      stream('appointments', {
        webhookFed: true,
        rates: openHours(0.001),
        lastCheckAt: new Date(night.getTime() - 60 * MIN),
        notified: count ? { count, oldest: night, ageMinutes: 0, latestEvent: night } : NO_NOTIFICATIONS,
      });
    expect(planSource(source([fed(3)], { now: night })).planned.webhook).toBeGreaterThanOrEqual(1);
    expect(planSource(source([fed(0)], { now: night })).planned.webhook).toBe(0);
  });
});

describe('the tail rule', () => {
  // The practice's hours, as its models know them.
  const hours = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
  const busy = () => [
    stream('appointments', { rates: openHours(27) }),
    stream('customers', { rates: openHours(7) }),
    stream('orders', { rates: openHours(5.5) }),
  ];

  it('gives the busy streams one interval in their busy hours, the tightest the budget carries', () => {
    const plan = planSource(source(busy(), { now: new Date('2026-11-23T08:00:00Z'), activeSlots: hours }));
    expect(plan.intervalMinutes).not.toBeNull();
    // 3 streams for 11 busy hours in about 150 requests less the reserve: a quarter of an hour or so.
    expect(plan.intervalMinutes!).toBeGreaterThan(10);
    expect(plan.intervalMinutes!).toBeLessThan(25);
    // Near-even checks, where the square-root rule alone gives appointments about twice the checks of orders.
    const [appointments, customers, orders] = plan.streams.map((s) => s.expectedChecks);
    expect(appointments! / orders!).toBeLessThan(1.3);
    expect(customers! / orders!).toBeLessThan(1.2);
    // Polled at a common interval, the checks are a count known in advance: the interval spends the budget whole.
    expect(total(plan)).toBeLessThanOrEqual(150);
    expect(total(plan)).toBeGreaterThan(150 - 8);
  });

  it('spaces the morning as the afternoon when no stream is fed by webhooks and the hours are known, and keeps chance back otherwise', () => {
    const morning = new Date('2026-11-23T08:00:00Z');
    const early = planSource(source(busy(), { now: morning, activeSlots: hours }));
    const checksBefore = early.streams.reduce((n, s) => n + s.expectedChecks, 0);
    // At 13:30, half the busy hours gone, having spent what the 08:00 plan expected of them.
    const later = planSource(
      source(busy(), {
        now: new Date('2026-11-23T13:30:00Z'),
        activeSlots: hours,
        budgetUsed: Math.round(checksBefore / 2),
        streams: busy().map((s) => ({ ...s, lastCheckAt: new Date('2026-11-23T13:25:00Z') })),
      }),
    );
    expect(early.intervalMinutes).not.toBeNull();
    expect(later.intervalMinutes).not.toBeNull();
    expect(Math.abs(early.intervalMinutes! - later.intervalMinutes!)).toBeLessThan(1);
    // A stream fed by webhooks brings a random count of checks: the interval keeps about one deviation of it back
    // (about 12 of 150 requests). This one is quiet: its own safety nets cost 3 requests, a third of a minute.
    const fed = stream('memberships', { webhookFed: true, rates: openHours(0.001), lastCheckAt: new Date('2026-11-23T07:00:00Z') });
    const withFed = planSource(source([...busy(), fed], { now: morning, activeSlots: hours }));
    expect(withFed.intervalMinutes! - early.intervalMinutes!).toBeGreaterThan(1);
    // So it is while the model knows no hours of the practice: nearly every hour looks active, the night's as the day's.
    const nearlyAll = new Uint8Array(SLOTS).fill(1).fill(0, 0, 2);
    const noHours = planSource(source(busy(), { now: morning, activeSlots: nearlyAll }));
    expect(noHours.intervalMinutes! - early.intervalMinutes!).toBeGreaterThan(1);
  });

  it("leaves a stream with a small share of the day's changes to the exchange rate, however busy its hours", () => {
    const at = new Date('2026-11-23T11:00:00Z');
    // A surge: every stream three times its usual day; memberships 2.5 changes an hour, 4% of appointments' 60.
    const surge = (memberships: number, lastCheckAt?: (resource: string) => Date) =>
      [
        stream('appointments', { rates: openHours(60) }),
        stream('customers', { rates: openHours(16) }),
        stream('orders', { rates: openHours(12) }),
        stream('memberships', { rates: openHours(memberships) }),
      ].map((s) => (lastCheckAt ? { ...s, lastCheckAt: lastCheckAt(s.resource) } : s));
    const plan = planSource(source(surge(2.5), { now: at, activeSlots: hours }));
    const interval = plan.intervalMinutes!;
    expect(interval).not.toBeNull();
    const checks = Object.fromEntries(plan.streams.map((s) => [s.resource, s.expectedChecks]));
    expect(checks.memberships!).toBeLessThan(checks.orders! / 2);
    const gone = () => new Date(at.getTime() - (interval + 1) * MIN);
    expect(due(source(surge(2.5, gone), { now: at, activeSlots: hours }))).toMatchObject({ orders: 'check/interval', memberships: null });
    // A tenth of the busiest stream's changes is a share of the day's: on the interval with the others.
    const tenth = planSource(source(surge(6), { now: at, activeSlots: hours }));
    const goneTenth = () => new Date(at.getTime() - (tenth.intervalMinutes! + 1) * MIN);
    expect(due(source(surge(6, goneTenth), { now: at, activeSlots: hours }))).toMatchObject({ memberships: 'check/interval' });
    // Its budget stays with the streams that carry the changes: their interval is about what it is without it.
    const without = planSource(source(surge(2.5).slice(0, 3), { now: at, activeSlots: hours }));
    expect(Math.abs(interval - without.intervalMinutes!)).toBeLessThan(1);
  });

  it("checks the slowest busy hours at twice the interval, ranked by today's rates", () => {
    // Appointments and orders slow down in the last hour (3 and 2.5 changes against 27 and 5.5): together 5.5 of the
    // day's 407.5 busy changes, within SLACK_SHARE (4%, 16.3); orders' other hours (55 more) are not.
    const lastHour = (perHour: number, last: number) => openHours(perHour).map((v, s) => (s % 24 === 18 ? last : v));
    const streams = (over: Partial<StreamInput> = {}) => [
      stream('appointments', { rates: lastHour(27, 3), ...over }),
      stream('customers', { rates: openHours(7), ...over }),
      stream('orders', { rates: lastHour(5.5, 2.5), ...over }),
    ];
    const at = new Date('2026-11-23T18:10:00Z');
    const slots = (input: SourceInput) => Object.fromEntries([...slackSlots(input)].map(([r, s]) => [r, [...s].map((x) => x % 24)]));
    expect(SLACK_SHARE).toBe(0.04);
    expect(slots(source(streams(), { now: at, activeSlots: hours }))).toEqual({ appointments: [18], orders: [18] });
    // Hours of equal rates are none slower than the others: a practice as busy all day has no slack.
    expect(slots(source(busy(), { now: at, activeSlots: hours }))).toEqual({});

    // In a slack hour orders are due at twice the interval (its two and a half changes an hour alone would make it
    // due at 24 minutes); customers, busy alike all day, at the interval. Most of the budget is spent, so the
    // exchange rate makes nothing due by itself.
    const late = { now: at, activeSlots: hours, budgetUsed: 140 };
    const plan = planSource(source(streams(), late));
    expect(plan.mu).toBe(Number.POSITIVE_INFINITY);
    const interval = plan.intervalMinutes!;
    expect(interval).toBeGreaterThan(10);
    const since = (minutes: number) => streams({ lastCheckAt: new Date(at.getTime() - minutes * MIN) });
    expect(due(source(since(interval * SLACK_FACTOR - 1), late))).toMatchObject({ customers: 'check/interval', orders: null });
    expect(due(source(since(interval * SLACK_FACTOR + 1), late)).orders).toBe('check/interval');

    // The model calls 18:00 slow, but today a rush came then (40 changes an hour read in it): the hour is not slack,
    // and the rush is checked at the interval.
    const model = lastHour(27, 3);
    const rush = [
      stream('appointments', { rates: model.map((v, s) => (s % 24 === 18 ? 40 : v)), forecastRates: model, modelRates: model }),
      stream('customers', { rates: openHours(7) }),
    ];
    expect(slots(source(rush, { now: at, activeSlots: hours }))).toEqual({});
    // Before it was found, the same forecast made it the day's slowest hour.
    const before = rush.map((s) => ({ ...s, rates: s.forecastRates ?? s.rates }));
    expect(slots(source(before, { now: new Date('2026-11-23T17:10:00Z'), activeSlots: hours }))).toEqual({ appointments: [18] });

    // The ranking is kept between plans with the streams' rates, and only while what it was ranked from is the same:
    // the same rates array ranked by its forecast (evidence read at 11:00 raised 18:00, the forecast did not) and
    // without one (18:00 is busy by the rates themselves) gives each its own hours, again when asked again.
    const raised = rush[0]!.rates;
    const noon = new Date('2026-11-23T11:10:00Z');
    const byForecast = () => [{ ...rush[0]!, rates: raised }, rush[1]!];
    const byRates = () => [{ ...rush[0]!, rates: raised, forecastRates: undefined }, rush[1]!];
    for (let i = 0; i < 2; i++) {
      expect(slots(source(byForecast(), { now: noon, activeSlots: hours }))).toEqual({ appointments: [18] });
      expect(slots(source(byRates(), { now: noon, activeSlots: hours }))).toEqual({});
    }
  });

  it('checks a busy stream that has gone the interval, and not one whose hours are quiet', () => {
    const at = new Date('2026-11-23T11:00:00Z');
    const plan = planSource(source(busy(), { now: at }));
    const interval = plan.intervalMinutes!;
    const lastAt = (minutes: number) => busy().map((s) => ({ ...s, lastCheckAt: new Date(at.getTime() - minutes * MIN) }));
    expect(due(source(lastAt(interval + 1), { now: at })).orders).toBe('check/interval');
    expect(due(source(lastAt(interval - 3), { now: at })).orders).toBeNull();
    // Evening: no busy hours left, no interval.
    const evening = new Date('2026-11-23T20:00:00Z');
    expect(planSource(source(busy(), { now: evening })).intervalMinutes).toBeNull();
    // Never more often than once per expected change: a stream with 1.5 changes an hour waits about 40 minutes.
    const slow = [stream('memberships', { rates: openHours(1.5), lastCheckAt: new Date(at.getTime() - 30 * MIN) })];
    expect(due(source(slow, { now: at }))).toEqual({ memberships: null });
  });

  it("counts the interval's checks as they come: the interval less the source's lag, rounded up to the tick", () => {
    // A stream is due at the first tick the interval has passed since what its last check read up to: the check's
    // start less the source's lag. The plan made at 9:00 is followed at its interval, tick by tick, to the end of
    // the busy hours: it expected the checks that come (a closing check beside them). Counted at the interval itself,
    // it expected 45.5 where 53 came at a lag of two minutes and a tick of 15 s, and 45.5 where 39 came at a tick of
    // five minutes and no lag.
    const at = new Date('2026-11-23T09:00:00Z');
    const end = Date.parse('2026-11-23T19:00:00Z');
    for (const [tickSeconds, lagSeconds] of [
      [60, 60],
      [15, 120],
      [300, 0],
      [15, 0],
    ] as const) {
      const input = source(
        busy().map((x) => ({ ...x, lastCheckAt: new Date(at.getTime() - lagSeconds * 1000) })),
        { now: at, activeSlots: hours, lagMs: lagSeconds * 1000, settings: { ...source([]).settings, tickSeconds } },
      );
      const plan = planSource(input);
      const interval = plan.intervalMinutes!;
      expect(plan.mu).toBe(Number.POSITIVE_INFINITY);
      let last = at.getTime() - lagSeconds * 1000;
      let came = 0;
      for (let t = at.getTime(); t < end; t += tickSeconds * 1000) {
        if ((t - last) / MIN >= interval) {
          came++;
          last = t - lagSeconds * 1000;
        }
      }
      const expected = plan.streams.find((x) => x.resource === 'customers')!.expectedChecks;
      expect(Math.abs(expected - 1 - came), `tick ${tickSeconds} s, lag ${lagSeconds} s`).toBeLessThanOrEqual(1);
    }
  });

  it('checks a busy stream once more as its busy hours end, so its last changes do not wait for the sweep', () => {
    const closing = new Date('2026-11-23T19:05:00Z');
    const last = new Date('2026-11-23T18:50:00Z');
    const streams = [
      ...busy().map((s) => ({ ...s, lastCheckAt: last })),
      stream('memberships', { rates: openHours(1.5), lastCheckAt: new Date('2026-11-23T17:00:00Z') }),
    ];
    // Most of the budget spent or pinned: the exchange rate alone would leave them to the sweep.
    const spent = { now: closing, budgetUsed: 135, pinned: [{ resource: 'products', purpose: 'check' as const, cost: 1, firesLeft: 10 }] };
    expect(due(source(streams, spent))).toEqual({
      appointments: 'check/interval',
      customers: 'check/interval',
      orders: 'check/interval',
      // A slow stream waits for the sweep.
      memberships: null,
    });
    // Due with less than one change likely: one left unread at the close waits all evening (the sweep reads only
    // what is known to wait). Orders at 5.5 an hour, last checked at 18:56: 0.37 expected. At 18:59, too little: 0.09.
    const lastOrders = (at: string) => streams.map((s) => (s.resource === 'orders' ? { ...s, lastCheckAt: new Date(at) } : s));
    expect(due(source(lastOrders('2026-11-23T18:56:00Z'), spent)).orders).toBe('check/interval');
    expect(due(source(lastOrders('2026-11-23T18:59:00Z'), spent)).orders).toBeNull();
    // Once: a check after the close leaves nothing expected.
    const checked = streams.map((s) => ({ ...s, lastCheckAt: new Date('2026-11-23T19:02:00Z') }));
    expect(Object.values(due(source(checked, spent)))).toEqual([null, null, null, null]);
    // A check reads up to the source's lag before it starts: one at 19:00:00 would leave the busy hours' last
    // minute unread all evening, so the closing check waits for the lag to pass.
    const edge = { ...spent, now: new Date('2026-11-23T19:00:00Z'), lagMs: 60_000 };
    expect(due(source(streams, edge)).orders).toBeNull();
    expect(due(source(streams, { ...edge, now: new Date('2026-11-23T19:00:45Z') })).orders).toBeNull();
    expect(due(source(streams, { ...edge, now: new Date('2026-11-23T19:01:00Z') })).orders).toBe('check/interval');
    expect(due(source(streams, { ...edge, lagMs: 0 })).orders).toBe('check/interval');
    // The plan counts it: a stream busy until 19:00 has one check more than its busy hours' share.
    const plan = planSource(source(busy(), { now: new Date('2026-11-23T18:00:00Z') }));
    expect(plan.streams[2]!.expectedChecks).toBeGreaterThanOrEqual(60 / plan.intervalMinutes! + 1 - 0.01);
  });

  it('does not spend the day on a rush nobody forecast: checks come no faster than a usual day spreads the budget', () => {
    const at = new Date('2026-11-23T18:30:00Z');
    // A usual day: busy 8-19. Today: quiet until 18:00, then a rush the forecast (activity-scaled) did not expect.
    const rush = (perHour: number) =>
      Float64Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 18 ? perHour * 0.8 ** ((s % 24) - 18) : 0.001));
    const streams = busy().map((s) =>
      stream(s.resource, {
        rates: rush(s.resource === 'appointments' ? 50 : 15),
        forecastRates: openHours(0.05),
        modelRates: s.rates,
        lastCheckAt: new Date(at.getTime() - 5 * MIN),
      }),
    );
    const plan = planSource(source(streams, { now: at, budgetUsed: 30 }));
    // 3 streams busy 11 hours a day on 150 requests: no faster than every 13.2 minutes.
    expect(plan.intervalMinutes!).toBeGreaterThanOrEqual((60 * 33) / 150 - 0.01);
    // ...and the hours after it are planned as busy as it is now: the interval leaves budget for them.
    expect(plan.streams[0]!.expectedChecks).toBeGreaterThan(10);
  });

  it('plans a slow stream a little above its forecast by the forecast, not as a rush of unknown end', () => {
    const at = new Date('2026-11-23T17:00:00Z');
    // Memberships on a surge day: forecast 1.4 an hour at 17:00 (open, below busy), today's evidence 2.1.
    const forecast = openHours(1.4);
    const today = forecast.map((r) => r * 1.5);
    const streams = [
      ...busy().map((s) => ({ ...s, lastCheckAt: new Date(at.getTime() - 5 * MIN) })),
      stream('memberships', { rates: today, forecastRates: forecast, modelRates: forecast, lastCheckAt: new Date(at.getTime() - 5 * MIN) }),
    ];
    const plan = planSource(source(streams, { now: at, budgetUsed: 116 }));
    const memberships = plan.streams.find((s) => s.resource === 'memberships')!;
    // Two hours of 2.1 changes: a few checks, not one every interval until midnight.
    expect(memberships.expectedChecks).toBeLessThan(5);
    const without = planSource(source(streams.slice(0, -1), { now: at, budgetUsed: 116 }));
    expect(plan.intervalMinutes!).toBeLessThan(without.intervalMinutes! * 1.25);
  });

  it("reads a busy afternoon's evidence fading into the closed evening as the day's end: one closing check, not a rush", () => {
    const at = new Date('2026-11-23T19:10:00Z');
    // A surge: the forecast (busy 8-19) was beaten all afternoon, and the evidence of the 18:00 hour fades after 19:00.
    const forecast = openHours(30);
    const fading = forecast.map((r, slot) => (slot % 24 >= 19 ? 12 * 0.7 ** ((slot % 24) - 19) : r));
    const evidence = { at: new Date('2026-11-23T18:56:00Z').getTime(), observedPerHour: 60, forecastPerHour: 30 };
    const lastAt = new Date('2026-11-23T18:56:00Z');
    const appointments = stream('appointments', {
      rates: fading,
      forecastRates: forecast,
      modelRates: forecast,
      evidence,
      lastCheckAt: lastAt,
    });
    // Budget for its closing check and the nightly refreshes, not for an evening of checks.
    const pinned = [{ resource: 'companies', purpose: 'full' as const, cost: 2, firesLeft: 3 }];
    expect(due(source([appointments], { now: at, budgetUsed: 142, pinned }))).toEqual({ appointments: 'check/interval' });
    // Once: checked since 19:00, it is not due again while its fading rates still call the hour busy.
    const checked = { ...appointments, lastCheckAt: new Date('2026-11-23T19:12:00Z') };
    expect(due(source([checked], { now: new Date('2026-11-23T19:40:00Z'), budgetUsed: 143, pinned }))).toEqual({ appointments: null });
    // A rush found in hours the forecast calls closed (the evidence's own hour closed) is still one of unknown end.
    const evening = openHours(0.001);
    const rush = evening.map((r, slot) => (slot % 24 >= 19 ? 40 : r));
    const found = { at: new Date('2026-11-23T19:05:00Z').getTime(), observedPerHour: 40, forecastPerHour: 0.001 };
    const rushing = stream('appointments', { rates: rush, forecastRates: evening, modelRates: forecast, evidence: found, lastCheckAt: at });
    const plan = planSource(source([rushing], { now: at, budgetUsed: 100 }));
    expect(plan.streams[0]!.expectedChecks).toBeGreaterThan(10);
  });

  it('leaves streams fed by webhooks to their notified bound, and steps aside when the bounds stretch', () => {
    const fed = busy().map((s) => ({ ...s, webhookFed: true }));
    expect(planSource(source(fed, { now: new Date('2026-11-23T08:00:00Z') })).intervalMinutes).toBeNull();
    // A small budget spaces it to hours...
    const small = planSource(source(busy(), { now: new Date('2026-11-23T08:00:00Z'), budget: 20 }));
    expect(small.intervalMinutes!).toBeGreaterThan(100);
    // ...and targets the budget cannot carry stretch as before, without it.
    const targets = busy().map((s) => ({ ...s, maxStalenessMinutes: 5 }));
    const stretched = planSource(source(targets, { now: new Date('2026-11-23T08:00:00Z'), budget: 20 }));
    expect(stretched.stretch).toBeGreaterThan(1);
    expect(stretched.intervalMinutes).toBeNull();
  });
});

describe('pacing a stream fed by webhooks', () => {
  const at = (iso: string) => new Date(`2026-11-23T${iso}:00Z`);
  const fed = (now: Date, over: Partial<StreamInput>) =>
    stream('appointments', {
      webhookFed: true,
      forecastRates: openHours(30),
      rates: openHours(30),
      lastCheckAt: new Date(now.getTime() - 5 * MIN),
      ...over,
    });
  const expected = (now: Date, over: Partial<StreamInput>) =>
    planSource(source([fed(now, over)], { now, budgetUsed: 60 })).streams[0]!.expectedChecks;

  it('does not book checks for an afternoon fading into the closed evening, but does for a rush of unknown end', () => {
    const now = at('17:00');
    // Today's evidence carries into the evening as an excess that fades, an hour the forecast calls closed.
    const fading = (rates: Float64Array) => rates.map((r, slot) => (slot % 24 >= 19 ? r + [8, 6, 4, 3, 2][(slot % 24) - 19]! : r));
    const plain = expected(now, {});
    expect(expected(now, { rates: fading(openHours(30)) })).toBeCloseTo(plain, 6);
    // Three times the forecast now: a rush whose end nobody knows, so the evening it fades into is priced.
    const rush = openHours(30).map((r, slot) => (slot % 24 === 17 ? 90 : r));
    expect(expected(now, { rates: fading(rush) })).toBeGreaterThan(expected(now, { rates: rush }) + 1);
  });

  it("reads a closed hour busier than the open hour before it as a rush, and one fading from it as the day's end", () => {
    const now = at('19:00');
    const forecast = openHours(10);
    // Today's evidence, found in the afternoon's open hours, carries into the closed evening from `first` an hour.
    const today = (first: number) => forecast.map((r, slot) => (slot % 24 >= 19 ? r + first * 0.7 ** ((slot % 24) - 19) : r));
    const quietAfter = (rates: Float64Array) => rates.map((r, slot) => (slot % 24 >= 20 ? forecast[slot]! : r));
    const evidence = { at: now.getTime(), observedPerHour: 14, forecastPerHour: 10 };
    const priced = (rates: Float64Array) => expected(now, { forecastRates: forecast, rates, evidence });
    // 3.6 an hour, under the 10 the forecast gave the hour before: the afternoon fading, its evening not priced.
    expect(priced(today(3.6))).toBeCloseTo(priced(quietAfter(today(3.6))), 6);
    // 14 an hour, above it: a rush going on past the usual hours, its evening priced.
    expect(priced(today(14))).toBeGreaterThan(priced(quietAfter(today(14))) + 1);
  });

  it('counts safety nets at their instants: none before the reset for a stream read this evening', () => {
    const now = at('19:30');
    expect(expected(now, { lastCheckAt: at('19:20') })).toBeLessThan(0.05);
    // Read at 14:00 and quiet since: one at 20:00, the next after midnight.
    const quiet = { rates: flat(0.001), forecastRates: flat(0.001), lastCheckAt: at('14:00') };
    expect(expected(now, quiet)).toBeGreaterThan(0.99);
    expect(expected(now, quiet)).toBeLessThan(1.05);
  });

  it('reads notified changes within their bound when the floors and the checks already waiting overrun the budget by a fraction', () => {
    const now = at('19:00');
    // A few changes an hour still expected this hour, a catalog at its floor, 13 changes notified 9.9 min ago.
    const rates = openHours(30).map((r, slot) => (slot % 24 === 19 ? 0.5 : r));
    const input = source(
      [
        fed(now, {
          rates,
          lastCheckAt: at('18:48'),
          notified: { count: 13, oldest: new Date(now.getTime() - 9.9 * MIN), ageMinutes: 60, latestEvent: new Date(now.getTime() - MIN) },
        }),
        stream('giftcertificates', { kind: 'full', cost: 4, lastCheckAt: at('00:00') }),
      ],
      { now, budgetUsed: 145 },
    );
    const plan = planSource(input);
    expect(plan.available).toBe(5);
    expect(plan.stretch).toBe(1);
    expect(plan.streams[0]!.due?.purpose).toBe('webhook');
  });
});

describe('pacing', () => {
  it('releases the reserve over the last hours of the quota day', () => {
    const streams = [stream('appointments', { rates: flat(30) })];
    expect(planSource(source(streams)).reserve).toBe(Math.ceil(Math.sqrt(150) + 15));
    expect(planSource(source(streams, { now: new Date('2026-11-23T22:30:00Z') })).reserve).toBe(Math.ceil((Math.sqrt(150) + 15) / 2));
    expect(planSource(source(streams, { now: new Date('2026-11-23T23:59:00Z') })).reserve).toBeLessThanOrEqual(1);
  });

  it('spends budget that the reset would take on streams expected to have changes waiting, most expected first', () => {
    const late = new Date('2026-11-23T23:40:00Z');
    const at = (minutesAgo: number) => new Date(late.getTime() - minutesAgo * MIN);
    const evening = openHours(0.001).map((r, slot) => (slot % 24 >= 19 ? 0.9 : r));
    const streams = [
      stream('orders', { rates: evening, lastCheckAt: at(40) }),
      stream('customers', { rates: evening, lastCheckAt: at(60) }),
      stream('products', { lastCheckAt: at(120) }),
    ];
    expect(due(source(streams, { now: late, budgetUsed: 140 }))).toEqual({
      orders: 'check/pacing',
      customers: 'check/pacing',
      products: null,
    });
    // Not before the last half hour, and not beyond what is left.
    expect(due(source(streams, { now: at(20), budgetUsed: 140 }))).toEqual({ orders: null, customers: null, products: null });
    expect(due(source(streams, { now: late, budgetUsed: 149 }))).toEqual({ orders: null, customers: 'check/pacing', products: null });
  });

  it('sweeps a slow stream with a small chance of a change waiting, and a stream fed by webhooks only for what was notified', () => {
    const late = new Date('2026-11-23T23:40:00Z');
    const at = (minutesAgo: number) => new Date(late.getTime() - minutesAgo * MIN);
    // Busy until 19:00; checked at 18:30, so the last half hour of its day (0.15 an hour) is unread: 0.075 expected.
    const slow = openHours(0.15);
    const busy = openHours(20);
    // Notified half a minute ago: still within the debounce, so only the sweep makes it due now.
    const notified = { count: 2, oldest: at(0.5), ageMinutes: 1, latestEvent: null };
    const streams = [
      stream('memberships', { rates: slow, lastCheckAt: new Date('2026-11-23T18:30:00Z') }),
      // Fed by webhooks, last checked at 18:50 with rates that say busy until 19:00: nothing was notified since.
      stream('appointments', { rates: busy, webhookFed: true, lastCheckAt: new Date('2026-11-23T18:50:00Z') }),
      stream('orders', { rates: busy, webhookFed: true, lastCheckAt: new Date('2026-11-23T18:50:00Z'), notified }),
    ];
    expect(due(source(streams, { now: late, budgetUsed: 140 }))).toEqual({
      memberships: 'check/pacing',
      appointments: null,
      orders: 'webhook/pacing',
    });
  });

  it('sweeps a quiet stream explored at 15:57 for the one-in-fifty chance of a change since, not a catalog that does not change', () => {
    const late = new Date('2026-11-23T23:40:00Z');
    const explored = new Date('2026-11-23T15:57:00Z');
    // 0.005 an hour to 19:00 and 0.001 after: about 0.02 changes expected since 15:57, the budget's last requests
    // otherwise lost at the reset. A catalog expects a millionth of one: a check of it would buy nothing.
    const streams = [
      stream('products', { rates: openHours(0.005), lastCheckAt: explored }),
      stream('services', { rates: flat(1e-7), lastCheckAt: explored }),
    ];
    expect(due(source(streams, { now: late, budgetUsed: 146 }))).toEqual({ products: 'check/pacing', services: null });
    // With no budget left over there is nothing to sweep with.
    expect(due(source(streams, { now: late, budgetUsed: 150 }))).toEqual({ products: null, services: null });
    // The last request, beside a stream fed by webhooks whose plan still expects a ten-thousandth of a notified check
    // after hours: the request is not held back for so small a chance.
    const fed = (perHour: Float64Array) =>
      stream('appointments', { rates: perHour, webhookFed: true, lastCheckAt: new Date('2026-11-23T18:50:00Z') });
    expect(due(source([...streams, fed(openHours(20))], { now: late, budgetUsed: 149 }))).toEqual({
      products: 'check/pacing',
      services: null,
      appointments: null,
    });
    // Notified two an hour until midnight, the plan expects about half a check more: products' one in fifty waits,
    // a stream with changes expected by the handful is still read.
    const busy = source([...streams, fed(flat(2))], { now: late, budgetUsed: 149 });
    const expected = planSource(busy).streams.find((p) => p.resource === 'appointments')!.expectedChecks;
    expect(expected).toBeGreaterThan(0.1);
    expect(expected).toBeLessThan(1);
    expect(due(busy)).toEqual({ products: null, services: null, appointments: null });
    const memberships = stream('memberships', { rates: flat(1), lastCheckAt: explored });
    expect(due(source([...streams, fed(flat(2)), memberships], { now: late, budgetUsed: 149 }))).toEqual({
      products: null,
      services: null,
      appointments: null,
      memberships: 'check/pacing',
    });
  });
});

describe('exploration', () => {
  const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));

  it('derives its bound from the budget, within 1 to 4 hours, and leaves out streams with a signal', () => {
    const quiet = ['products', 'services', 'employees'].map((r) => stream(r));
    const bound = (budget: number, streams = quiet) => exploreBound(source(streams, { budget, activeSlots: office }));
    expect(bound(300)).toBeCloseTo(((11 * 3) / 15) * 60, 6);
    expect(bound(15)).toBe(EXPLORE_MAX_HOURS * 60);
    expect(bound(100_000)).toBe(EXPLORE_MIN_HOURS * 60);
    expect(bound(150, [stream('appointments', { webhookFed: true }), stream('catalog', { kind: 'full' })])).toBeNull();
    expect(exploreBound(source(quiet, { activeSlots: null }))).toBeNull();
    expect(planSource(source(quiet, { activeSlots: office, budget: 300 })).exploreMinutes).toBeCloseTo(bound(300)!, 6);
    // A budget too small for exploration and the floors keeps the floors.
    expect(planSource(source(quiet, { activeSlots: office, budget: 5 })).exploreMinutes).toBeNull();
  });

  it('checks a stream the model calls quiet once the bound has passed in active hours, and never outside them', () => {
    const bound = exploreBound(source([stream('products')], { activeSlots: office }))!;
    const products = (minutesAgo: number, now = NOW) =>
      source([stream('products', { lastCheckAt: new Date(now.getTime() - minutesAgo * MIN) })], { now, activeSlots: office });
    expect(due(products(bound))).toEqual({ products: 'check/exploration' });
    expect(due(products(bound - 10))).toEqual({ products: null });
    // At 22:00, the practice is closed: the last check at 16:00 waits for the morning.
    const night = new Date('2026-11-23T22:00:00Z');
    expect(due(products(6 * 60, night))).toEqual({ products: null });
    // Only active hours count: checked at 18:00, it is due again `bound` minutes into the next morning.
    const evening = products(4 * 60, night);
    const next = nextCheck(evening, planSource(evening), 'products');
    expect(next?.reason).toBe('exploration');
    expect(Math.abs(next!.at.getTime() - (Date.parse('2026-11-24T08:00:00Z') + (bound - 60) * MIN - 15_000))).toBeLessThanOrEqual(MIN);
    // The plan pays for it.
    expect(total(planSource(products(0)))).toBeGreaterThan(total(planSource({ ...products(0), activeSlots: null })));
  });

  it('counts its checks at their instants: none planned for an evening its next turn does not reach', () => {
    // A bound of four hours, active 8-19. Explored at 11:59, a stream's next turn is at 15:59, its last of the day;
    // explored then, it has none left. Counted as a share of the active minutes left, the plan held 1.75 and then
    // 0.75 checks for it, budget the busy streams did not get until the active hours ended.
    const checks = (now: string, last: string) => {
      const input = source([stream('products', { lastCheckAt: new Date(last) })], { now: new Date(now), activeSlots: office, budget: 40 });
      expect(exploreBound(input)).toBe(EXPLORE_MAX_HOURS * 60);
      return planSource(input).streams[0]!.expectedChecks;
    };
    expect(checks('2026-11-23T12:00:00Z', '2026-11-23T11:59:00Z')).toBe(1);
    expect(checks('2026-11-23T15:00:00Z', '2026-11-23T11:59:00Z')).toBe(1);
    // What is left is its rate's share: a change in a thousand hours.
    expect(checks('2026-11-23T16:00:00Z', '2026-11-23T15:57:00Z')).toBeLessThan(0.01);
    // Before the practice opens, checked last at 18:00 the evening before: 2 hours of the bound are left to pass.
    expect(checks('2026-11-23T07:00:00Z', '2026-11-22T17:00:00Z')).toBe(3);
  });

  it('keeps its share on a budget the freshness bounds strain: the bounds stretch a little more instead', () => {
    const busy = stream('appointments', { webhookFed: true, rates: openHours(30) });
    const tight = (exploring: boolean) =>
      planSource(source([busy, stream('products')], { budget: 40, activeSlots: exploring ? office : null }));
    const without = tight(false);
    const withIt = tight(true);
    expect(without.stretch).toBeGreaterThan(1);
    expect(withIt.exploreMinutes).not.toBeNull();
    expect(withIt.stretch).toBeGreaterThanOrEqual(without.stretch);
  });
});

describe('a practice whose changes show no hours yet', () => {
  const anyHour = new Uint8Array(SLOTS).fill(1);
  const quiet = ['customers', 'orders', 'products', 'services'].map((r) => stream(r));

  it('explores with half the budget, not a twentieth, until its hours show', () => {
    const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
    // 24 active hours a day, 4 streams: 96 checks a day over 75 requests, one every 77 minutes each.
    expect(exploreBound(source(quiet, { activeSlots: anyHour }))).toBeCloseTo((96 / 75) * 60, 6);
    // Hours learned: the usual share, capped at 4 hours.
    expect(exploreBound(source(quiet, { activeSlots: office }))).toBe(EXPLORE_MAX_HOURS * 60);
    // Webhooks registered: their notifications will show the hours, before any has come.
    expect(exploreBound(source(quiet, { activeSlots: anyHour, webhooksRegistered: true }))).toBe(EXPLORE_MAX_HOURS * 60);
    // Streams fed by webhooks show the hours as they come: the usual share.
    expect(exploreBound(source([...quiet, stream('appointments', { webhookFed: true })], { activeSlots: anyHour }))).toBe(
      EXPLORE_MAX_HOURS * 60,
    );
  });

  it('explores at the usual share once its checks found it at work today', () => {
    // Its day has begun, and its streams' rates are what their checks found since: busy from quiet is known.
    expect(exploreBound(source(quiet, { activeSlots: anyHour, foundAtWork: true }))).toBe(EXPLORE_MAX_HOURS * 60);
    // Nor in turns: each stream a bound after its own last check.
    const midnight = new Date('2026-11-23T00:00:00Z');
    const at = (minutes: number) =>
      source(
        quiet.map((q) => ({ ...q, lastCheckAt: midnight })),
        { now: new Date(midnight.getTime() + minutes * MIN), activeSlots: anyHour, foundAtWork: true },
      );
    expect(due(at(EXPLORE_MAX_HOURS * 60 - 5))).toEqual(Object.fromEntries(quiet.map((q) => [q.resource, null])));
    expect(due(at(EXPLORE_MAX_HOURS * 60))).toEqual(Object.fromEntries(quiet.map((q) => [q.resource, 'check/exploration'])));
  });

  it('explores its streams in turns: checked together, they are not explored together again', () => {
    // All four were read at midnight (a first pass): each is explored once a bound, at its own turn in it.
    const midnight = new Date('2026-11-23T00:00:00Z');
    const bound = exploreBound(source(quiet, { activeSlots: anyHour }))!;
    const at = (minutes: number) =>
      source(
        quiet.map((q) => ({ ...q, lastCheckAt: midnight })),
        { now: new Date(midnight.getTime() + minutes * MIN), activeSlots: anyHour },
      );
    const firstTurns = quiet.map((q) => {
      for (let m = 1; m <= 2 * bound; m++) if (due(at(m))[q.resource] === 'check/exploration') return m;
      return null;
    });
    // A turn of one of them every bound / 4 or so (the golden ratio's spread), none later than the bound and a third.
    const sorted = firstTurns.map((t) => t!).sort((a, b) => a - b);
    expect(new Set(sorted).size).toBe(4);
    expect(sorted[3]!).toBeLessThanOrEqual((bound * 4) / 3 + 1);
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(bound / 2);
    // With webhooks registered, or hours known, a bound from the last check as before: together.
    const hooked = (minutes: number) => ({ ...at(minutes), webhooksRegistered: true });
    const hookedBound = exploreBound(hooked(0))!;
    expect(due(hooked(hookedBound))).toEqual(Object.fromEntries(quiet.map((q) => [q.resource, 'check/exploration'])));
  });

  it('keeps every busy stream on the common interval: none is minor until its hours show', () => {
    // A new practice at work since 8:00: appointments and customers just read, their rates held until midnight (nothing
    // says when it closes); orders, last read at 08:14 by its exploration turn, priced at 2.2 an hour, under a
    // twentieth of appointments'. Its rate comes from the first pass and one empty window: on the interval.
    const input = (slots: Uint8Array) =>
      source(
        [
          stream('appointments', { rates: flat(50), lastCheckAt: NOW }),
          stream('customers', { rates: flat(8), lastCheckAt: NOW }),
          stream('orders', { rates: flat(2.2), lastCheckAt: new Date('2026-11-23T08:14:00Z') }),
        ],
        { budgetUsed: 70, activeSlots: slots, settings: { ...source([]).settings, tickSeconds: 60 } },
      );
    const orders = (slots: Uint8Array) => planSource(input(slots)).streams.find((s) => s.resource === 'orders')!;
    expect(orders(anyHour).due).toEqual({ purpose: 'check', reason: 'interval' });
    expect(orders(anyHour).expectedChecks).toBeGreaterThan(10);
    // Its hours known, the same rates make orders minor (memberships beside appointments): left to its exploration.
    const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
    expect(orders(office).due).toBeNull();
    expect(orders(office).expectedChecks).toBeLessThan(3);
  });
});

describe("another stream's surprise", () => {
  const found = new Date(NOW.getTime() - 2 * MIN);
  const input = (lastCheck: Date, over: Partial<StreamInput> = {}) =>
    source([stream('customers', { lastCheckAt: lastCheck, surpriseElsewhereAt: found, ...over })]);

  it('checks a polled stream once, when it has not been checked since the surprise was found', () => {
    expect(due(input(new Date(found.getTime() - 60 * MIN)))).toEqual({ customers: 'check/evidence' });
    // Checked since: its own check is the evidence now.
    expect(due(input(new Date(found.getTime() + MIN)))).toEqual({ customers: null });
    // No surprise, no check.
    expect(due(input(new Date(found.getTime() - 60 * MIN), { surpriseElsewhereAt: undefined }))).toEqual({ customers: null });
    // A stream fed by webhooks, or a catalog, is not woken.
    expect(due(input(new Date(found.getTime() - 60 * MIN), { webhookFed: true }))).toEqual({ customers: null });
    expect(due(input(new Date(found.getTime() - 60 * MIN), { kind: 'full' }))).toEqual({ customers: null });
    // The plan pays for it.
    const woken = planSource(input(new Date(found.getTime() - 60 * MIN)));
    const not = planSource(input(new Date(found.getTime() + MIN)));
    expect(woken.streams[0]!.expectedChecks - not.streams[0]!.expectedChecks).toBeCloseTo(1, 6);
  });
});

describe('the hour after the active hours', () => {
  const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
  const closing = new Date('2026-11-23T19:20:00Z');
  const input = (lastCheck: string) =>
    source(
      [
        stream('appointments', { rates: openHours(0.5), modelRates: openHours(30), lastCheckAt: new Date(lastCheck) }),
        stream('products', { modelRates: flat(0.001), lastCheckAt: new Date(lastCheck) }),
      ],
      { now: closing, activeSlots: office },
    );

  it('checks once a stream a usual day would have changed, however quiet today was', () => {
    expect(due(input('2026-11-23T18:00:00Z'))).toEqual({ appointments: 'check/exploration', products: null });
    // Already checked since the usual changes: nothing more.
    expect(due(input('2026-11-23T18:59:00Z'))).toEqual({ appointments: null, products: null });
    // Later in the night, no.
    expect(due({ ...input('2026-11-23T18:00:00Z'), now: new Date('2026-11-23T20:30:00Z') })).toEqual({
      appointments: null,
      products: null,
    });
  });
});

describe('the look after the active hours', () => {
  const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
  const at = (iso: string) => new Date(`2026-11-23T${iso}Z`);
  /**
   * A practice open 8-19 near its close, `used` requests spent: two busy streams, memberships (about one change an hour
   * on a usual day, `usualPerHour`, quiet today so far) and products (a quiet stream, `productsToday` an hour today)
   * explored at 15:50, and two catalogs.
   */
  const input = (now: string, used: number, o: { usualPerHour?: number; productsToday?: Float64Array; last?: string } = {}) =>
    source(
      [
        stream('appointments', { rates: openHours(30), modelRates: openHours(30), lastCheckAt: at('18:30:00') }),
        stream('customers', { rates: openHours(8), modelRates: openHours(8), lastCheckAt: at('18:30:00') }),
        stream('memberships', {
          rates: openHours(0.01),
          modelRates: openHours(o.usualPerHour ?? 0.8),
          lastCheckAt: at(o.last ?? '15:50:00'),
        }),
        stream('products', {
          rates: o.productsToday ?? openHours(0.01),
          modelRates: openHours(0.01),
          lastCheckAt: at(o.last ?? '15:50:00'),
        }),
        stream('companies', { kind: 'full', lastCheckAt: new Date('2026-11-22T21:00:00Z') }),
        stream('giftcertificates', { kind: 'full', cost: 3, lastCheckAt: new Date('2026-11-22T21:00:00Z') }),
      ],
      {
        now: at(now),
        budgetUsed: used,
        activeSlots: office,
        settings: { ...source([]).settings, tickSeconds: 60 },
      },
    );

  it('checks once a stream a usual day or today would have changed since its last check', () => {
    // Memberships, explored at 15:50: a usual day brings about three changes by 19:00. Products, no.
    expect(due(input('19:01:00', 100))).toMatchObject({ memberships: 'check/exploration', products: null });
    // Checked since: nothing expected, no look.
    expect(due(input('19:01:00', 100, { last: '18:58:00' }))).toMatchObject({ memberships: null, products: null });
    // A quiet stream whose check at 15:50 found a burst: today's rates (under one change an hour, too few for a busy
    // hour and its closing check) expect a few more since. Looked at tonight too, with five requests left (the
    // exchange rate checks nothing by itself then).
    const burst = openHours(0.8);
    expect(due(input('19:01:00', 145, { productsToday: burst }))).toMatchObject({ products: 'check/exploration' });
    // Once: checked in this hour already, the look does not come again, whatever today's rates say (a rush's).
    const rush = new Float64Array(SLOTS).fill(40);
    expect(due(input('19:40:00', 145, { productsToday: rush, last: '19:02:00' })).products).not.toBe('check/exploration');
  });

  it('is made when a short budget leaves no room for exploration in the last busy hour', () => {
    // Five requests left at 19:01: exploration is gone (the catalogs' floors do not fit beside the reserve). The look
    // is not exploration: it comes all the same, from the reserve.
    expect(planSource(input('19:01:00', 145)).exploreMinutes).toBeNull();
    expect(due(input('19:01:00', 145))).toMatchObject({ memberships: 'check/exploration' });
    // But never from what the catalogs' floors still need before the reset (four requests): with four left, none.
    expect(due(input('19:01:00', 146))).toMatchObject({ memberships: null });
  });

  it('leaves a busy stream to its closing check, which waits for the source to reach the close', () => {
    // A source read a minute behind: at 19:00 a check reads to 18:59, and the closing check comes at 19:01. Customers,
    // last checked at 18:50: a usual day brings a change and a third since (the look's measure), today's rates two
    // thirds (not worth a request by the rate alone). A look at 19:00 as well would be a second request for the
    // same changes but the last minute's.
    const behind = (now: string) => {
      const x = input(now, 140);
      const streams = x.streams.map((st) =>
        st.resource === 'customers' ? { ...st, rates: openHours(4), modelRates: openHours(8), lastCheckAt: at('18:50:00') } : st,
      );
      return { ...x, streams, lagMs: 60_000 };
    };
    expect(due(behind('19:00:00'))).toMatchObject({ customers: null, memberships: 'check/exploration' });
    expect(due(behind('19:01:00'))).toMatchObject({ customers: 'check/interval' });
  });
});

describe('the end of a spent day', () => {
  const office = Uint8Array.from({ length: SLOTS }, (_, s) => (s % 24 >= 8 && s % 24 < 19 ? 1 : 0));
  const at = (iso: string) => new Date(`2026-11-23T${iso}Z`);
  /** Three busy streams, open 8-19, last checked at `last`, `left` requests left, the source read a minute behind. */
  const input = (now: string, left: number, last = '18:40:00') =>
    source(
      [
        stream('appointments', { rates: openHours(27), modelRates: openHours(27), lastCheckAt: at(last) }),
        stream('customers', { rates: openHours(7), modelRates: openHours(7), lastCheckAt: at(last) }),
        stream('orders', { rates: openHours(5.5), modelRates: openHours(5.5), lastCheckAt: at(last) }),
      ],
      { now: at(now), budgetUsed: 150 - left, activeSlots: office, lagMs: 60_000, settings: { ...source([]).settings, tickSeconds: 60 } },
    );
  const plan = (x: SourceInput) => Object.fromEntries(planSource(x).streams.map((s) => [s.resource, s]));

  it('holds the last requests for the closing checks still to come, and reads the close with them', () => {
    // 18:55, five requests left: the three are due by the interval, and each one's closing check is to come at
    // 19:01. A third check now would leave one of the closings unread until midnight: held, with the reason shown.
    const five = plan(input('18:55:00', 5));
    expect(five.appointments!.due).toEqual({ purpose: 'check', reason: 'interval' });
    expect(five.customers!.due).toEqual({ purpose: 'check', reason: 'interval' });
    expect(five.orders!.due).toBeNull();
    expect(five.orders!.waiting).toBe(HELD_FOR_CLOSINGS);
    // With six, all three now and their closing checks after.
    expect(Object.values(plan(input('18:55:00', 6))).every((s) => s.due?.reason === 'interval')).toBe(true);
    // At 19:01, once the source reached the close, the three are read with the three left.
    expect(due(input('19:01:00', 3))).toEqual({ appointments: 'check/interval', customers: 'check/interval', orders: 'check/interval' });
  });

  it('looks at a stream of a change or two an hour at the close for a fifth of a change', () => {
    // Memberships at 1.5 an hour in the practice's last hour, last checked at 18:45: 0.4 expected by 19:01, under the
    // whole change the look asks of a quiet stream. Its last change of the day would wait for the next morning.
    const x = (last: string) =>
      source(
        [
          stream('memberships', { rates: openHours(1.5), modelRates: openHours(1.5), lastCheckAt: at(last) }),
          stream('products', { rates: openHours(0.01), modelRates: openHours(0.01), lastCheckAt: at(last) }),
        ],
        { now: at('19:01:00'), budgetUsed: 140, activeSlots: office, lagMs: 60_000 },
      );
    expect(due(x('18:45:00'))).toEqual({ memberships: 'check/exploration', products: null });
    // Checked a minute before the close: a fortieth of a change, not worth a request.
    expect(due(x('18:59:00'))).toEqual({ memberships: null, products: null });
    // Before the catalogs' floors, which may slip past midnight: two requests left, four needed by the floors.
    const floors = x('18:45:00');
    floors.streams.push(stream('giftcertificates', { kind: 'full', cost: 4, lastCheckAt: new Date('2026-11-22T21:00:00Z') }));
    expect(due({ ...floors, budgetUsed: 148 })).toMatchObject({ memberships: 'check/exploration', products: null });
    // Held for near the close: a quiet stream's floor due at 18:55 with one request left waits for the look.
    const floorDue = (left: number) =>
      plan(
        source(
          [
            stream('memberships', { rates: openHours(1.5), modelRates: openHours(1.5), lastCheckAt: at('18:45:00') }),
            stream('services', { lastCheckAt: new Date('2026-11-22T18:00:00Z') }),
          ],
          { now: at('18:55:00'), budgetUsed: 150 - left, activeSlots: office, lagMs: 60_000 },
        ),
      ).services!;
    expect(floorDue(1).due).toBeNull();
    expect(floorDue(1).waiting).toBe(HELD_FOR_CLOSINGS);
    expect(floorDue(2).due).toEqual({ purpose: 'check', reason: 'floor' });
  });

  it('looks at the close at a stream of a change every other hour, not at a slower one', () => {
    // A new practice's second day: orders priced at 0.7 an hour from its one day of memory, last checked at 17:52. By
    // 19:01 0.8 of a change is expected: not the whole change a quiet stream's look asks, but the fifth the closing
    // look asks. Left to the next morning, its changes of 17:53 and 18:16 waited past midnight.
    const x = (rate: number) =>
      source([stream('orders', { rates: openHours(rate), modelRates: openHours(rate), lastCheckAt: at('17:52:00') })], {
        now: at('19:01:00'),
        budgetUsed: 140,
        activeSlots: office,
        lagMs: 60_000,
      });
    expect(due(x(0.7))).toEqual({ orders: 'check/exploration' });
    // At 0.3 an hour (a change every three hours): 0.35 expected, left to its exploration and the sweep.
    expect(due(x(0.3))).toEqual({ orders: null });
    // And held for at the end of a spent day as the busier streams' looks are: at 18:55 with one request left, a
    // catalog's floor due then waits for it.
    const spent = plan(
      source(
        [
          stream('orders', { rates: openHours(0.7), modelRates: openHours(0.7), lastCheckAt: at('17:52:00') }),
          stream('services', { lastCheckAt: new Date('2026-11-22T18:00:00Z') }),
        ],
        { now: at('18:55:00'), budgetUsed: 149, activeSlots: office, lagMs: 60_000 },
      ),
    ).services!;
    expect(spent.due).toBeNull();
    expect(spent.waiting).toBe(HELD_FOR_CLOSINGS);
  });

  it('starts a full refresh only when all its pages fit in the requests left', () => {
    // A catalog of three pages due at its floor: with two requests left it would stop part-way and be read again
    // after the reset as a backfill, outside the budget.
    const catalog = (left: number) =>
      plan(
        source([stream('giftcertificates', { kind: 'full', cost: 3, lastCheckAt: new Date('2026-11-22T09:00:00Z') })], {
          budgetUsed: 150 - left,
        }),
      ).giftcertificates!;
    expect(catalog(2).due).toBeNull();
    expect(catalog(2).waiting).toMatch(/full refresh \(3 requests\) does not fit in the 2 left today: it waits for the reset/);
    expect(catalog(3).due).toEqual({ purpose: 'full', reason: 'floor' });
    // Two due at the same tick, each fitting alone: the second waits when both do not fit.
    const two = (left: number) =>
      planSource(
        source(
          ['giftcertificates', 'membershipprograms'].map((r) =>
            stream(r, { kind: 'full', cost: 3, lastCheckAt: new Date('2026-11-22T09:00:00Z') }),
          ),
          { budgetUsed: 150 - left },
        ),
      ).streams.map((p) => p.due?.purpose ?? p.waiting);
    expect(two(5)).toEqual(['full', 'its full refresh (3 requests) does not fit in the 2 left today: it waits for the reset']);
    expect(two(6)).toEqual(['full', 'full']);
    // What it leaves at the end of the day goes to the sweep: memberships, a change expected since its last check.
    const late = source(
      [
        stream('giftcertificates', { kind: 'full', cost: 4, lastCheckAt: new Date('2026-11-22T21:00:00Z') }),
        stream('memberships', { rates: flat(0.3), lastCheckAt: new Date('2026-11-23T19:00:00Z') }),
      ],
      { now: new Date('2026-11-23T23:40:00Z'), budgetUsed: 147 },
    );
    expect(due(late)).toEqual({ giftcertificates: null, memberships: 'check/pacing' });
  });
});

describe('the staleness bound the alert compares with', () => {
  const settings = source([]).settings;
  const at = (iso: string) => new Date(iso);
  it('is the freshness target in busy hours (stretched as the plan stretches it), else the floor', () => {
    const orders = stream('orders', { rates: openHours(4), maxStalenessMinutes: 30 });
    expect(stalenessBound(orders, settings, 1, at('2026-11-23T10:00:00Z'), 'UTC')).toBe(30);
    expect(stalenessBound(orders, settings, 1.5, at('2026-11-23T10:00:00Z'), 'UTC')).toBe(45);
    expect(stalenessBound(orders, settings, 1, at('2026-11-23T22:00:00Z'), 'UTC')).toBe(24 * 60);
  });
  it('is the safety net for a stream fed by webhooks, and none during a first pass', () => {
    expect(stalenessBound(stream('appointments', { webhookFed: true }), settings, 1, NOW, 'UTC')).toBe(360);
    expect(stalenessBound(stream('customers', { backfill: true }), settings, 1, NOW, 'UTC')).toBeNull();
    expect(stalenessBound(stream('companies'), settings, 1, NOW, 'UTC')).toBe(24 * 60);
  });
});

describe('the searches for the exchange rate and the common interval', () => {
  /** A deterministic stream of numbers in [0, 1) (mulberry32), so each case is the same at every run. */
  const random = (seed: number) => () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  /**
   * A spend of the planner's shape: hourly pieces, each checked every sqrt(2 mu cost / rate) minutes, no more often
   * than once per expected change and no less often than its bound (or never, without one), plus checks that do not
   * depend on mu. It falls as mu grows, with a bend at every cap.
   */
  function spendOf(next: () => number): (mu: number) => number {
    const pieces = Array.from({ length: 1 + Math.floor(next() * 24) }, () => ({
      minutes: next() < 0.1 ? next() * 60 : 60,
      perMinute: next() < 0.2 ? 0 : next() ** 3 * 0.5,
      bound: next() < 0.5 ? Number.POSITIVE_INFINITY : 10 + next() * 240,
      cost: 1 + Math.floor(next() * 3),
    }));
    const fixed = Math.floor(next() * 10);
    return (mu) => {
      let n = fixed;
      for (const p of pieces) {
        const poll =
          p.perMinute > 0 ? Math.max(Math.sqrt((2 * mu * p.cost) / p.perMinute), p.cost / p.perMinute) : Number.POSITIVE_INFINITY;
        const x = Math.min(poll, p.bound);
        if (Number.isFinite(x)) n += (p.minutes / x) * p.cost;
      }
      return n;
    };
  }

  it('find the least exchange rate within the budget, to a thousandth, in a handful of spends', () => {
    const next = random(7);
    let searches = 0;
    let spends = 0;
    while (searches < 500) {
      const spend = spendOf(next);
      const atZero = spend(0);
      const atInfinity = spend(Number.POSITIVE_INFINITY);
      if (!(atZero > atInfinity + 1)) continue;
      const budget = atInfinity + next() * (atZero - atInfinity);
      const counted = (mu: number) => (spends++, spend(mu));
      const atOne = counted(1);
      const mu =
        atOne <= budget
          ? fallingRoot(counted, budget, 0, atZero, 1, atOne, MU_SEARCH)
          : fallingRoot(counted, budget, 1, atOne, Number.POSITIVE_INFINITY, counted(Number.POSITIVE_INFINITY), MU_SEARCH);
      searches++;
      expect(spend(mu)).toBeLessThanOrEqual(budget);
      // The spend falls with mu: over budget a thousandth below the answer, so the least mu within it is no further.
      expect(spend(mu * (1 - MU_PRECISION))).toBeGreaterThan(budget);
    }
    // 9.8 a search here; the search before (quadrupling to a bracket, then regula falsi with a bisection after two
    // steps that did not halve it) took 10.5 on these spends, and 15 on the planner's own.
    expect(spends / searches).toBeLessThan(10);
  });

  it('find the tightest common interval within the budget, to 1%', () => {
    const next = random(11);
    for (let i = 0; i < 300; i++) {
      const minutes = Array.from({ length: 1 + Math.floor(next() * 12) }, () => 60 * next());
      const fixed = 5 * next();
      const spend = (interval: number) => fixed + minutes.reduce((n, m) => n + m / Math.max(1, interval - 0.25), 0);
      const lo = 1 + next() * 20;
      const hi = 1440;
      const budget = spend(hi) + next() * (spend(lo) - spend(hi));
      if (spend(lo) <= budget) continue;
      const interval = fallingRoot(spend, budget, lo, spend(lo), hi, spend(hi), INTERVAL_SEARCH);
      expect(spend(interval)).toBeLessThanOrEqual(budget);
      expect(spend(interval / 1.01)).toBeGreaterThan(budget);
    }
  });
});
