/**
 * The budget scheduler on days unlike the ones it learned from, on the
 * injected clock against the real simulator, PostgreSQL, run queue and
 * webhook receiver: a rush moved to the evening, with and without webhooks,
 * a burst on a stream the model calls quiet, and one stream's surprise.
 * Requests are the simulator's own count; the history (28 ordinary days) and
 * the played day are apart. Whole days and hours that move:
 * held-out-days.int.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DAY, HOUR, MINUTE, stalenessMinutes } from '../../bench/support/day-rig.ts';
import { collectStatus } from '../../src/status/detail.ts';
import { planDay, REFERENCE_DAY, type DayChange, type DayPattern } from '../../simulator/day.ts';
import { DATE, DAY_TIMEOUT, EVENING, heldOutRigs, windows, ZONE } from './support/held-out.ts';

const startRig = heldOutRigs();

describe('a rush moved to the evening, without webhooks', () => {
  it('brings the next check forward as soon as a check finds it, and reads every change before midnight', DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150 });
    const from = r.dayStart + 15 * HOUR;
    const played = await r.play(planDay(EVENING, DATE, ZONE, 5), from, r.dayStart + DAY);

    const appointments = played.dispatches.filter((d) => d.resource === 'appointments');
    const found = await windows(r, 'appointments', from, r.dayStart + DAY);
    const first = found.findIndex((w) => w.found > 0);
    expect(first).toBeGreaterThan(0);
    // The check that found the rush after a quiet day: the next one comes far sooner than it did.
    const before = found[first]!.end - found[first - 1]!.end;
    const after = found[first + 1]!.end - found[first]!.end;
    expect(after).toBeLessThan(before / 2);
    expect(after).toBeLessThanOrEqual(20 * MINUTE);
    // What it found, not the forecast, keeps the checks coming through the rush.
    const rush = appointments.filter((d) => Date.parse(d.firedAt) > found[first]!.end && Date.parse(d.firedAt) < r.dayStart + 21 * HOUR);
    expect(rush.filter((d) => d.reason === 'evidence').length).toBeGreaterThan(rush.length / 2);

    const day = r.requestsOn(r.dayStart, r.dayStart + DAY);
    expect(day.requests).toBeLessThanOrEqual(150);
    expect(played.changes.filter((c) => c.visibleAt === null)).toEqual([]);
    const stale = stalenessMinutes(played.changes).sort((a, b) => a - b);
    expect(stale[Math.floor(0.95 * (stale.length - 1))]).toBeLessThanOrEqual(60);
  });
});

describe('a check that reads quiet hours and the first minutes of a rush', () => {
  it('is read from its first change: the practice is woken at once', DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150 });
    const rushAt = r.dayStart + 18 * HOUR;
    // An operator's check of appointments 8 minutes into the evening rush, its last check long before.
    const operatorAt = rushAt + 8 * MINUTE;
    let fired = false;
    r.extraRuns = async (now) => {
      if (fired || now.getTime() < operatorAt) return [];
      fired = true;
      const job = { source: 'clinic', resource: 'appointments', purpose: 'check' as const, reason: 'operator', firedAt: now.toISOString() };
      return (await r.serve.dispatcher.dispatch(job)) ? [job] : [];
    };
    const played = await r.play(planDay(EVENING, DATE, ZONE, 5), r.dayStart + 15 * HOUR, rushAt + 30 * MINUTE);
    expect(fired).toBe(true);
    const res = await r.app.pool.query<{ window_start: Date; window_end: Date; n: number; first_change_at: Date | null }>(
      `SELECT window_start, window_end, inserted + updated AS n, first_change_at FROM pmsync.runs
       WHERE source = 'clinic' AND resource = 'appointments' AND status = 'succeeded' AND window_end > $1 ORDER BY window_end LIMIT 1`,
      [new Date(rushAt)],
    );
    const check = res.rows[0]!;
    // It read half an hour and more of the quiet day before the rush's first minutes, and knows when they began.
    expect(check.window_start.getTime()).toBeLessThan(rushAt - 30 * MINUTE);
    expect(check.window_end.getTime()).toBeLessThan(operatorAt);
    expect(check.n).toBeGreaterThanOrEqual(5);
    expect(check.first_change_at!.getTime()).toBeGreaterThanOrEqual(rushAt);
    // Read from its first change, it is a surprise: the practice's other polled streams are checked on it at once.
    const after = played.dispatches.filter((d) => Date.parse(d.firedAt) > operatorAt);
    for (const resource of ['customers', 'orders', 'memberships', 'products']) {
      const first = after.find((d) => d.resource === resource);
      expect(first?.reason, resource).toBe('evidence');
      expect(Date.parse(first!.firedAt) - operatorAt, resource).toBeLessThanOrEqual(2 * MINUTE);
    }
  });
});

describe('a rush moved to the evening, on the busy streams and on a slower one', () => {
  it("checks the slower stream in the rush on the busy streams' evidence, before its own checks see it", DAY_TIMEOUT, async () => {
    // Memberships change 40 times on a usual day: a twelfth of the practice's changes.
    const usual: DayPattern = { ...REFERENCE_DAY, changes: { ...REFERENCE_DAY.changes, memberships: { total: 40, created: 2 } } };
    const r = await startRig({ budget: 150, historyPattern: usual, webhooks: true });
    // The busy streams are webhook-fed (a notification the evening before), so their checks find the rush at once;
    // memberships sends no notifications and is polled.
    await r.play(
      [{ at: r.dayStart - HOUR - 30 * MINUTE, resource: 'appointments', created: false }],
      r.dayStart - 90 * MINUTE,
      r.dayStart - HOUR,
    );
    const from = r.dayStart + 15 * HOUR;
    // Well after hours, from 20:00, when its model expects nothing of any stream (the hour after closing has its check).
    const rush: DayPattern = { ...usual, openHour: 20, closeHour: 23, shape: [1, 1, 1] };
    const played = await r.play(planDay(rush, DATE, ZONE, 5), from, r.dayStart + DAY);

    const start = r.dayStart + 20 * HOUR;
    const checks = played.dispatches.filter((d) => d.resource === 'memberships' && Date.parse(d.firedAt) >= start);
    const firstEvidence = checks.find((d) => d.reason === 'evidence');
    expect(firstEvidence).toBeDefined();
    // Due on evidence before any check of its own had found a change of the rush: the busy streams' evidence. (A
    // window ends a lag before its check starts: the first one with finds may be this check's own.)
    const ownFinds = (await windows(r, 'memberships', start, r.dayStart + DAY)).filter((w) => w.found > 0);
    expect(ownFinds.length).toBeGreaterThan(0);
    expect(ownFinds[0]!.end).toBeGreaterThan(Date.parse(firstEvidence!.firedAt) - 5 * MINUTE);
    expect(Date.parse(firstEvidence!.firedAt)).toBeLessThan(start + 45 * MINUTE);
    const changes = played.changes.filter((c) => c.resource === 'memberships');
    expect(changes.length).toBeGreaterThan(0);
    expect(changes.filter((c) => c.visibleAt === null)).toEqual([]);
    expect(Math.max(...stalenessMinutes(changes))).toBeLessThanOrEqual(60);
    expect(r.requestsOn(r.dayStart, r.dayStart + DAY).requests).toBeLessThanOrEqual(150);
  });
});

describe('a rush moved to the evening, with webhooks', () => {
  it('paces notified checks: the budget is not gone while changes are still notified, and every change is read', DAY_TIMEOUT, async () => {
    const budget = 60;
    const r = await startRig({ budget, webhooks: true });
    // One notification the evening before makes the busy streams webhook-fed, as on a day after webhooks were registered.
    await r.play(
      [{ at: r.dayStart - HOUR - 30 * MINUTE, resource: 'appointments', created: false }],
      r.dayStart - 90 * MINUTE,
      r.dayStart - HOUR,
    );
    const from = r.dayStart + 16 * HOUR;
    const ledger = r.app.ledgerFor(r.config.sources[0]!);
    const left: Array<{ t: number; left: number }> = [];
    const played = await r.play(planDay(EVENING, DATE, ZONE, 5), from, r.dayStart + DAY, async (t) => {
      const snap = await ledger.snapshot();
      left.push({ t, left: snap.budget - snap.budgetUsed });
    });

    const day = r.requestsOn(r.dayStart, r.dayStart + DAY);
    expect(day.requests).toBeLessThanOrEqual(budget);
    // Still budget in hand when the last change of the rush is notified.
    const lastChange = Math.max(...played.changes.map((c) => c.at));
    expect(left.find((x) => x.t >= lastChange)!.left).toBeGreaterThan(0);
    expect(played.changes.filter((c) => c.visibleAt === null)).toEqual([]);
    const stale = stalenessMinutes(played.changes).sort((a, b) => a - b);
    expect(stale[Math.floor(0.95 * (stale.length - 1))]).toBeLessThanOrEqual(30);
  });
});

describe('a burst on a stream the model calls quiet', () => {
  it('is read within the exploration bound status states, at the cost of a few checks', DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150 });
    const from = r.dayStart + 8 * HOUR;
    r.clock.set(from);
    const [status] = await collectStatus(r.app, r.config);
    const bound = status!.budget.exploreWithinMinutes;
    expect(bound).not.toBeNull();
    expect(bound!).toBeLessThanOrEqual(4 * 60);

    const t0 = r.dayStart + 14 * HOUR;
    const burst: DayChange[] = Array.from({ length: 30 }, (_, i) => ({ at: t0 + i * 20_000, resource: 'products', created: false }));
    const played = await r.play(burst, from, r.dayStart + 19 * HOUR);
    expect(played.changes.every((c) => c.visibleAt !== null)).toBe(true);
    expect(Math.max(...stalenessMinutes(played.changes))).toBeLessThanOrEqual(bound! + 2);
    const products = played.dispatches.filter((d) => d.resource === 'products');
    expect(products.some((d) => d.reason === 'exploration')).toBe(true);
    // Exploring is bounded: a few checks of products over the day, not one a tick.
    expect(r.requestsOn(from, r.dayStart + 19 * HOUR).requestsByStream.products).toBeLessThanOrEqual(Math.ceil((11 * 60) / bound!) + 2);
  });
});

describe("one stream's surprise", () => {
  it("checks the practice's other polled streams once, on the next tick, and not again while it goes on", DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150 });
    // 30 appointment changes at 20:00-20:15, hours the practice is closed, found by an operator's check at 20:30.
    const t0 = r.dayStart + 20 * HOUR;
    const burst: DayChange[] = Array.from({ length: 30 }, (_, i) => ({ at: t0 + i * 30_000, resource: 'appointments', created: false }));
    const operatorAt = t0 + 30 * MINUTE;
    let fired = false;
    r.extraRuns = async (now) => {
      if (fired || now.getTime() < operatorAt) return [];
      fired = true;
      const job = { source: 'clinic', resource: 'appointments', purpose: 'check' as const, reason: 'operator', firedAt: now.toISOString() };
      return (await r.serve.dispatcher.dispatch(job)) ? [job] : [];
    };
    const played = await r.play(burst, r.dayStart + 19.5 * HOUR, r.dayStart + 22 * HOUR);
    expect(fired).toBe(true);
    expect(played.changes.filter((c) => c.visibleAt === null)).toEqual([]);
    const after = played.dispatches.filter((d) => Date.parse(d.firedAt) > operatorAt);
    for (const resource of ['customers', 'orders', 'memberships', 'products']) {
      const checks = after.filter((d) => d.resource === resource);
      expect(checks.length, resource).toBeGreaterThanOrEqual(1);
      expect(checks[0]!.reason, resource).toBe('evidence');
      expect(Date.parse(checks[0]!.firedAt) - operatorAt, resource).toBeLessThanOrEqual(2 * MINUTE);
      // Once: what it found (nothing) is its own evidence.
      expect(
        checks.filter((d) => d.reason === 'evidence'),
        resource,
      ).toHaveLength(1);
    }
  });
});

describe('a stream no check has read yet today', () => {
  it(
    "keeps its usual forecast: the morning's changes are read within the hour, not after a quiet morning assumed",
    DAY_TIMEOUT,
    async () => {
      // A week of history (a practice new to pmsync), no webhooks: nothing has read the day's first hours when they pass.
      const r = await startRig({ budget: 150, historyDays: 7 });
      const from = r.dayStart + 7 * HOUR;
      const played = await r.play(planDay(REFERENCE_DAY, DATE, ZONE, 5), from, r.dayStart + 11 * HOUR);
      for (const resource of ['appointments', 'customers', 'orders'] as const) {
        const morning = played.changes.filter((c) => c.resource === resource && c.at < r.dayStart + 10 * HOUR);
        expect(morning.length, resource).toBeGreaterThan(0);
        // Each of the day's first changes is read within the hour: the busy streams are checked from the opening on.
        expect(
          Math.max(...morning.map((c) => (c.visibleAt === null ? Number.POSITIVE_INFINITY : c.visibleAt - c.at))),
          resource,
        ).toBeLessThanOrEqual(HOUR);
      }
    },
  );
});
