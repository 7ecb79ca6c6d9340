/**
 * The scheduler on an injected clock, against the real simulator, PostgreSQL,
 * run queue and webhook receiver: whole practice days, bursts, replicas and
 * restarts, in seconds. Requests are counted with the simulator's own counter.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DayRig, DAY, HOUR, MINUTE, stalenessMinutes, type RigOptions } from '../../bench/support/day-rig.ts';
import { collectStatus } from '../../src/status/detail.ts';
import { loadChangeModels } from '../../src/state/change-model.ts';
import { slotRates } from '../../src/scheduler/rates.ts';
import { slotOf } from '../../src/time.ts';
import { planDay, REFERENCE_DAY, type DayChange } from '../../simulator/day.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { PRACTICE_SIZES } from './support/held-out.ts';
import { scaled } from '../support/time-scale.ts';

// A simulated day (hundreds of ticks, each a real scheduling decision on PostgreSQL): seconds on a quiet
// machine, a minute or more on a loaded CI runner. The test checks what happened, never how long it took.
const DAY_TIMEOUT = { timeout: scaled(300_000) };

const ZONE = 'America/New_York';

let db: TestDatabase | null = null;
let rig: DayRig | null = null;
afterEach(async () => {
  await rig?.close();
  await db?.drop();
  rig = null;
  db = null;
});

async function startRig(options: Partial<RigOptions> = {}): Promise<DayRig> {
  db = await createTestDatabase({ migrate: false });
  rig = await DayRig.start({
    databaseUrl: db.url,
    date: '2026-11-19',
    timeZone: ZONE,
    webhooks: true,
    sizes: PRACTICE_SIZES,
    tickSeconds: 60,
    ...options,
  });
  await rig.prepare();
  return rig;
}

const burst = (at: number, resource: DayChange['resource'], n: number): DayChange[] =>
  Array.from({ length: n }, (_, i) => ({ at: at + i * 100, resource, created: false }));

describe('a practice day', () => {
  it('spends at most its budget, reads notified changes within their bound, checks every stream, and reports it', DAY_TIMEOUT, async () => {
    const r = await startRig({ historyDays: 14, historyPattern: REFERENCE_DAY });
    const report = await r.playDay(REFERENCE_DAY);

    expect(report.requests).toBeLessThanOrEqual(150);
    expect(report.ledger.used).toBe(report.requests);
    expect(report.ledger.byPurpose.backfill + report.ledger.byPurpose.resync).toBe(0);
    for (const resource of ['appointments', 'customers', 'orders'] as const) {
      const s = stalenessMinutes(report.changes, (c) => c.resource === resource);
      expect(s.length, `${resource}: every change read`).toBe(report.changes.filter((c) => c.resource === resource).length);
      expect(Math.max(...s), `${resource}: slowest notified change`).toBeLessThanOrEqual(10);
    }
    // 300 appointment notifications cost far fewer requests: batched by the debounce and the exchange rate.
    expect(report.requestsByStream.appointments).toBeLessThan(100);
    const checked = new Set(report.dispatches.map((d) => d.resource));
    expect([...checked].sort()).toEqual([
      'appointments',
      'companies',
      'customers',
      'employees',
      'giftcertificates',
      'membershipprograms',
      'memberships',
      'orders',
      'products',
      'services',
    ]);

    // status and /metrics show the day's spend by purpose, and the plan for what is left of it.
    r.clock.set(r.dayStart + DAY - MINUTE);
    const [status] = await collectStatus(r.app, r.config);
    expect(status!.budget.spent.webhook).toBe(report.ledger.byPurpose.webhook);
    expect(status!.budget.used).toBe(report.requests);
    expect(status!.budget.budget).toBe(150);
    const metrics = await (await fetch(`${r.serve.url}/metrics`)).text();
    expect(metrics).toContain(`pmsync_requests_today{source="clinic",purpose="webhook"} ${report.ledger.byPurpose.webhook}`);
    expect(metrics).toMatch(/pmsync_requests_planned\{source="clinic",purpose="check"\} \d+/);
    expect(metrics).toContain('pmsync_budget{source="clinic"} 150');
    expect(metrics).toMatch(/pmsync_stream_staleness_seconds\{source="clinic",resource="appointments"\} \d+/);

    // The model is in PostgreSQL: a new process reads opening hours from it.
    const replica = await r.replica();
    const models = await loadChangeModels(replica.app.pool, 'clinic');
    const rates = slotRates(models.get('appointments') ?? [], r.clock.now());
    const at = (hour: number) => rates[slotOf(r.dayStart + DAY + hour * HOUR, ZONE)]!;
    expect(at(10)).toBeGreaterThan(10);
    expect(at(3)).toBeLessThan(at(10) / 10);
  });
});

describe('webhook notifications', () => {
  it(
    'read a burst with one check after the debounce, reach the notified change whatever lagSeconds says, then leave the stream to its safety net',
    DAY_TIMEOUT,
    async () => {
      const r = await startRig({ lagSeconds: 1800 });
      const t0 = r.dayStart + 14 * HOUR;
      // A first notification makes the stream webhook-fed; it is read, then the burst comes.
      await r.play([{ at: t0 - HOUR, resource: 'customers', created: false }], t0 - HOUR, t0 - 40 * MINUTE);
      const from = t0;
      const seen: Array<{ t: number; customers: boolean }> = [];
      const played = await r.play(burst(t0, 'customers', 150), from, from + 12 * MINUTE, (t, jobs) => {
        seen.push({ t, customers: jobs.some((j) => j.resource === 'customers') });
      });
      expect(seen.find((x) => x.t === from)?.customers).toBe(false); // within the debounce
      expect(played.changes.every((c) => c.visibleAt !== null)).toBe(true);
      expect(Math.max(...stalenessMinutes(played.changes))).toBeLessThanOrEqual(10);
      // 150 changes, 100 rows a page: two requests.
      const { customers, ...others } = r.requestsOn(from, from + 12 * MINUTE).requestsByStream;
      expect(customers).toBe(2);
      // 150 changes where customers' forecast expected next to none wake each other polled stream once, no more.
      expect(Object.values(others).every((n) => n === 1)).toBe(true);
      expect(played.dispatches.filter((d) => d.resource !== 'customers').every((d) => d.reason === 'evidence')).toBe(true);

      // Nothing more changes: the next check of customers is its safety net, six hours after the last one.
      const quiet = await r.play([], from + 12 * MINUTE, from + 12 * MINUTE + 7 * HOUR);
      const checks = quiet.dispatches.filter((d) => d.resource === 'customers');
      expect(checks.map((d) => d.reason)).toEqual(['safety-net']);
      const lastRead = played.dispatches.filter((d) => d.resource === 'customers').at(-1)!;
      expect(Date.parse(checks[0]!.firedAt) - Date.parse(lastRead.firedAt)).toBeGreaterThanOrEqual(6 * HOUR - MINUTE);
      expect(Date.parse(checks[0]!.firedAt) - Date.parse(lastRead.firedAt)).toBeLessThanOrEqual(6 * HOUR + MINUTE);
    },
  );
});

describe('replicas and restarts', () => {
  it('hold the budget: two serves on one database, and one restarted mid-day, never spend more than it', DAY_TIMEOUT, async () => {
    const r = await startRig({ webhooks: false, budget: 15, historyDays: 7, historyPattern: REFERENCE_DAY, tickSeconds: 120 });
    const b = await r.replica();
    let c = await r.replica();
    const changes = planDay(REFERENCE_DAY, '2026-11-19', ZONE, 3);
    let turn = 0;
    const dispatched: string[] = [];
    const played = await r.play(changes, r.dayStart, r.dayStart + DAY, async (t, jobs) => {
      dispatched.push(...jobs.map((j) => `${j.resource}@${j.firedAt}`));
      // Every tick a second serve ticks too, at the same instant: the first one leads, so it alone decides.
      const more = await (turn++ % 2 === 0 ? b.tick() : c.tick());
      expect(more).toEqual([]);
      dispatched.push(...more.map((j) => `${j.resource}@${j.firedAt}`));
      if (t === r.dayStart + 12 * HOUR) {
        await c.stop();
        c = await r.replica();
      }
    });
    const day = r.requestsOn(r.dayStart, r.dayStart + DAY);
    expect(day.requests).toBeLessThanOrEqual(15);
    expect(new Set(dispatched).size).toBe(dispatched.length);
    expect(played.changes.length).toBeGreaterThan(400);
    const [status] = await collectStatus(r.app, r.config);
    expect(status!.budget.used).toBe(day.requests);
    // Every stream had its daily check, whichever process ran it. A catalog whose full refresh did not fit in the
    // requests left that evening waited for the reset (started, it would have stopped part-way) and is read at once.
    r.clock.set(r.dayStart + DAY);
    const afterReset = (await r.tick()).map((j) => j.resource);
    expect(new Set([...dispatched.map((d) => d.split('@')[0]), ...afterReset]).size).toBe(10);
  });
});

describe('pinned streams', () => {
  it('fire at their cron times on the injected clock, and a fire missed while no serve was up runs once', DAY_TIMEOUT, async () => {
    const r = await startRig({ webhooks: false, schedules: { overrides: [{ resource: 'companies', cron: '0 */6 * * *' }] } });
    const span = await r.play([], r.dayStart, r.dayStart + 13 * HOUR);
    const fires = span.dispatches.filter((d) => d.resource === 'companies').map((d) => [new Date(d.firedAt).toISOString(), d.reason]);
    const local = (h: number) => new Date(r.dayStart + h * HOUR).toISOString();
    expect(fires).toEqual([
      [local(0), 'cron'],
      [local(6), 'cron'],
      [local(12), 'cron'],
    ]);
    // Down from 13:00 to 20:30: the 18:00 fire is caught up once at the restart.
    await r.serve.stop();
    const next = await r.replica();
    r.clock.set(r.dayStart + 20.5 * HOUR);
    const caught = (await next.tick()).filter((j) => j.resource === 'companies');
    expect(caught.map((j) => new Date(j.firedAt).toISOString())).toEqual([local(18)]);
    expect((await next.tick()).filter((j) => j.resource === 'companies')).toEqual([]);
  });
});
