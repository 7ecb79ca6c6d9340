/**
 * Failure isolation between practices served by one `pmsync serve`, on an
 * injected clock against the real simulator, PostgreSQL and run queue: a
 * practice whose credentials are refused and one whose server answers 500s
 * are paused with a growing backoff and recover once fixed, while a healthy
 * practice beside them runs exactly as it runs alone; webhook notifications
 * of a paused practice wait for the pause's end; a slow practice holds
 * at most two workers of two replicas while the others complete. Requests are
 * counted with the simulator's own request log, by gateway key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { basicValue } from '../../src/api/http.ts';
import { readCheckpoints } from '../../src/state/checkpoints.ts';
import { heldStreamLocks } from '../../src/state/locks.ts';
import { loadSourceHealth } from '../../src/state/source-health.ts';
import { runsInFlight } from '../../src/scheduler/dispatch.ts';
import { pauseMs } from '../../src/scheduler/source-failures.ts';
import { sourceViews } from '../../src/status/views.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { HeldDelays } from '../simulator/support.ts';
import { scaled } from '../support/time-scale.ts';
import { Fleet, type Practice } from './support/fleet.ts';
import { DayRig } from '../../bench/support/day-rig.ts';

const TIMEOUT = { timeout: scaled(300_000) };
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.parse('2027-01-12T08:00:00Z');
const SIZES = {
  customers: 120,
  appointments: 150,
  orders: 80,
  memberships: 10,
  giftcertificates: 10,
  products: 5,
  services: 5,
  employees: 4,
};
const STREAMS = 10;

const HEALTHY = { apikey: 'fleet-healthy-key-Q1', username: 'healthy.user', password: 'healthy-pass-W2', variant: 'core' as const };
const REFUSED = { apikey: 'fleet-refused-key-E3', username: 'refused.user', password: 'refused-pass-R4', variant: 'core' as const };
const FAILING = { apikey: 'fleet-failing-key-T5', username: 'failing.user', password: 'failing-pass-Y6', variant: 'core' as const };
const WRONG_PASSWORD = 'stale-pass-U7';

const dbs: TestDatabase[] = [];
const fleets: Fleet[] = [];
afterEach(async () => {
  for (const f of fleets.splice(0)) await f.close();
  for (const d of dbs.splice(0)) await d.drop();
});

async function startFleet(practices: Practice[], options: { delay?: HeldDelays['delay'] } = {}): Promise<Fleet> {
  const db = await createTestDatabase({ migrate: false });
  dbs.push(db);
  const fleet = await Fleet.start({ databaseUrl: db.url, start: T0, practices, sizes: SIZES, delay: options.delay });
  fleets.push(fleet);
  return fleet;
}

/** The distinct instants at which requests were sent, and how many at each. */
function bursts(instants: number[]): Array<{ at: number; n: number }> {
  const counts = new Map<number, number>();
  for (const t of instants) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts].sort((a, b) => a[0] - b[0]).map(([at, n]) => ({ at, n }));
}
const gaps = (b: Array<{ at: number }>) => b.slice(1).map((x, i) => (x.at - b[i]!.at) / MINUTE);
const done = async (fleet: Fleet, source: string) =>
  (await readCheckpoints(fleet.app.pool, source)).filter((c) => c.cursor !== null && !c.open).length;

describe('a source that fails', () => {
  it(
    'is paused with a growing backoff and recovers once fixed, while a healthy source beside it runs as it runs alone',
    TIMEOUT,
    async () => {
      // The healthy practice alone: what it is dispatched and sends in three hours.
      const alone = await startFleet([{ name: 'healthy', tenant: HEALTHY }]);
      const aloneJobs = await alone.play(T0, T0 + 3 * HOUR);
      const aloneRequests = alone.requests(HEALTHY.apikey);
      expect(await done(alone, 'healthy')).toBe(STREAMS);
      await alone.close();
      fleets.splice(0);

      // The same practice beside one whose credentials are refused and one whose server answers 500s.
      const fleet = await startFleet([
        { name: 'healthy', tenant: HEALTHY },
        { name: 'refused', tenant: REFUSED, password: WRONG_PASSWORD },
        { name: 'failing', tenant: FAILING },
      ]);
      fleet.sim.setFaults({ apikey: FAILING.apikey, errorRate: 1 });
      const jobs = await fleet.play(T0, T0 + 3 * HOUR);

      const key = (j: { resource: string; purpose: string; firedAt: string }) => `${j.resource} ${j.purpose} ${j.firedAt}`;
      expect(jobs.filter((j) => j.source === 'healthy').map(key)).toEqual(aloneJobs.map(key));
      expect(fleet.requests(HEALTHY.apikey)).toEqual(aloneRequests);
      expect(await done(fleet, 'healthy')).toBe(STREAMS);

      // Refused credentials: tried at 0, 15, 45 and 105 minutes; each try is at most one request per run slot.
      const refused = bursts(fleet.requests(REFUSED.apikey));
      expect(gaps(refused)).toEqual([15, 30, 60]);
      expect(refused.every((b) => b.n <= 2)).toBe(true);
      // Server errors: 1, 2, 4, ... minutes, capped at an hour; each try is the client's two attempts per run slot.
      const failing = bursts(fleet.requests(FAILING.apikey));
      expect(gaps(failing)).toEqual([1, 2, 4, 8, 16, 32, 60]);
      expect(failing.every((b) => b.n <= 4)).toBe(true);
      expect(failing[0]!.at).toBe(T0);

      const health = await loadSourceHealth(fleet.app.pool);
      expect(health.get('refused')).toMatchObject({ lastFailureKind: 'auth', lastErrorCode: 'AUTH_FAILED', consecutiveFailures: 4 });
      expect(health.get('refused')!.pausedUntil!.getTime()).toBe(refused.at(-1)!.at + pauseMs('auth', 4));
      expect(health.get('failing')).toMatchObject({ lastFailureKind: 'server', consecutiveFailures: 8 });
      expect(health.get('failing')!.failingSince!.getTime()).toBe(T0);
      expect(health.get('failing')!.pausedUntil!.getTime()).toBe(failing.at(-1)!.at + HOUR);
      expect(health.get('healthy')).toMatchObject({ consecutiveFailures: 0, failingSince: null, pausedUntil: null });

      // Said once each, however many ticks saw them paused.
      expect(fleet.logged(REFUSED_MSG).map((l) => l.source)).toEqual(['refused']);
      expect(fleet.logged(FAILING_MSG).map((l) => l.source)).toEqual(['failing']);
      // What status and the metrics read of each source: the scheduler's plan while it is kept, else observed afresh.
      const views = new Map((await sourceViews(fleet.app, fleet.config, fleet.serve.scheduler)).map((v) => [v.source, v]));
      expect(views.get('failing')!.pausedUntil).toEqual(health.get('failing')!.pausedUntil);
      expect(views.get('healthy')!.pausedUntil).toBeNull();
      const metrics = await (await fetch(`${fleet.serve.url}/metrics`)).text();
      expect(metrics).toContain('pmsync_source_paused{source="failing"} 1');
      expect(metrics).toContain('pmsync_source_paused{source="refused"} 1');
      expect(metrics).toContain('pmsync_source_paused{source="healthy"} 0');
      expect(metrics).toContain('pmsync_source_failing{source="refused"} 1');
      expect(metrics).toContain('pmsync_source_consecutive_failures{source="failing"} 8');

      // The server mends; someone fixes the password and restarts serve. Each is tried again when its pause ends, and catches up.
      fleet.sim.setFaults({ apikey: FAILING.apikey });
      await fleet.restart(
        fleet.configFor([
          { name: 'healthy', tenant: HEALTHY },
          { name: 'refused', tenant: REFUSED },
          { name: 'failing', tenant: FAILING },
        ]),
      );
      const before = { refused: fleet.requests(REFUSED.apikey).length, failing: fleet.requests(FAILING.apikey).length };
      const failingResumes = health.get('failing')!.pausedUntil!.getTime();
      const refusedResumes = health.get('refused')!.pausedUntil!.getTime();
      await fleet.play(T0 + 3 * HOUR, T0 + 5 * HOUR);
      expect(fleet.requests(FAILING.apikey, T0 + 3 * HOUR, failingResumes)).toHaveLength(0);
      expect(fleet.requests(REFUSED.apikey, T0 + 3 * HOUR, refusedResumes)).toHaveLength(0);
      expect(fleet.requests(FAILING.apikey).length).toBeGreaterThan(before.failing);
      expect(fleet.requests(REFUSED.apikey).length).toBeGreaterThan(before.refused);
      expect(await done(fleet, 'refused')).toBe(STREAMS);
      expect(await done(fleet, 'failing')).toBe(STREAMS);
      const healed = await loadSourceHealth(fleet.app.pool);
      for (const source of ['refused', 'failing']) {
        expect(healed.get(source)).toMatchObject({ consecutiveFailures: 0, failingSince: null, pausedUntil: null });
      }
      expect(
        fleet
          .logged(RECOVERED_MSG)
          .map((l) => l.source)
          .sort(),
      ).toEqual(['failing', 'refused']);

      // The health table never holds a secret: not the configured ones, not the stale password.
      const stored = (await fleet.app.pool.query<{ row: string }>('SELECT row_to_json(h)::text AS row FROM pmsync.source_health h')).rows
        .map((r) => r.row)
        .join('\n');
      expect(stored).toContain('401');
      for (const t of [HEALTHY, REFUSED, FAILING]) {
        for (const secret of [t.apikey, t.password, basicValue(t.username, t.password)]) expect(stored).not.toContain(secret);
      }
      expect(stored).not.toContain(WRONG_PASSWORD);
      expect(stored).not.toContain(basicValue(REFUSED.username, WRONG_PASSWORD));
    },
  );
});

describe('webhook notifications of a failing source', () => {
  it('trigger no check while it is paused, and are read by one check once the pause ends', TIMEOUT, async () => {
    const db = await createTestDatabase({ migrate: false });
    dbs.push(db);
    const r = await DayRig.start({
      databaseUrl: db.url,
      date: '2027-01-12',
      timeZone: 'UTC',
      webhooks: true,
      sizes: SIZES,
      tickSeconds: 60,
      source: { retry: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0, maxElapsedMs: 60_000 } },
    });
    try {
      await r.prepare();
      const t0 = r.dayStart + 10 * HOUR;
      const changes = Array.from({ length: 20 }, (_, i) => ({ at: t0 + i * 100, resource: 'customers' as const, created: false }));
      r.sim.setFaults({ apikey: r.tenant.apikey, errorRate: 1 });
      const failing = await r.play(changes, t0, t0 + 20 * MINUTE);
      const tries = bursts(
        r.sim
          .stats()
          .requests.filter((q) => q.apikey === r.tenant.apikey && q.at.getTime() >= t0)
          .map((q) => q.at.getTime()),
      );
      // Tried, then again after each pause: 1, 2, 4 and 8 minutes.
      expect(gaps(tries)).toEqual([1, 2, 4, 8]);
      // A check was due as the burst began (the practice is new, its hours unknown: customers' safety net, and the
      // other streams' exploration, tried in the same tries); each try after it reads the notified changes, after
      // each pause, the failed safety net's own retry first.
      const customers = failing.dispatches.filter((d) => d.resource === 'customers');
      expect(customers.map((d) => (Date.parse(d.firedAt) - t0) / MINUTE)).toEqual([0, 1, 3, 7, 15]);
      expect(customers.slice(2).map((d) => d.purpose)).toEqual(['webhook', 'webhook', 'webhook']);
      expect(failing.changes.every((c) => c.visibleAt === null)).toBe(true);

      // The server mends: nothing is sent before the pause ends, then one check reads every notified change.
      r.sim.setFaults({ apikey: r.tenant.apikey });
      const resumes = tries.at(-1)!.at + 16 * MINUTE;
      const healed = await r.play([], t0 + 20 * MINUTE, t0 + 40 * MINUTE);
      // Other streams get the checks that came due meanwhile (exploration), also not before the pause ends.
      expect(healed.dispatches.every((d) => Date.parse(d.firedAt) >= resumes)).toBe(true);
      expect(
        healed.dispatches.filter((d) => d.resource === 'customers').map((d) => [d.resource, d.purpose, Date.parse(d.firedAt)]),
      ).toEqual([['customers', 'webhook', resumes]]);
      const stored = await r.app.pool.query<{ id: string; m: string }>(
        `SELECT id, to_char(source_modified_at, 'YYYY-MM-DD"T"HH24:MI:SS') AS m FROM customers WHERE source = 'clinic' AND id = ANY($1::text[])`,
        [failing.changes.map((c) => c.id)],
      );
      const seen = new Map(stored.rows.map((row) => [row.id, row.m]));
      expect(failing.changes.filter((c) => !(seen.get(c.id)! >= c.modified))).toEqual([]);
    } finally {
      await r.close();
    }
  });
});

describe('a slow source', () => {
  it('holds at most two workers of the fleet while the other sources complete', TIMEOUT, async () => {
    const delays = new HeldDelays();
    const SLOW = { ...HEALTHY, apikey: 'fleet-slow-key-I8', username: 'slow.user' };
    const fleet = await startFleet(
      [
        { name: 'slow', tenant: SLOW, source: { requestTimeoutMs: 120_000 } },
        { name: 'healthy', tenant: HEALTHY },
        { name: 'other', tenant: FAILING },
      ],
      { delay: delays.delay },
    );
    // Every request of the slow practice hangs until the test lets it go.
    fleet.sim.setFaults({ apikey: SLOW.apikey, slowMs: 10_000 });
    const replica = await fleet.replica();
    fleet.clock.set(T0);
    let slowActive = 0;
    const streams = fleet.serve.scheduler.streams.map((s) => s.key);
    const others = async () => [...(await runsInFlight(fleet.app.pool, streams))].filter((k) => !k.startsWith('slow/'));
    // Two replicas of four workers each decide and run; each tick, the other practices' runs complete.
    for (let i = 0; i < 20; i++) {
      fleet.clock.set(T0 + i * MINUTE);
      await fleet.serve.scheduler.tick();
      await replica.scheduler.tick();
      for (;;) {
        const active = await fleet.app.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'pmsync-run' AND state = 'active' AND group_id = 'slow'`,
        );
        const locks = (await heldStreamLocks(fleet.app.pool)).filter((l) => l.holder?.includes(' slow/'));
        slowActive = Math.max(slowActive, active.rows[0]!.n, locks.length);
        if ((await others()).length === 0) break;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    expect(await done(fleet, 'healthy')).toBe(STREAMS);
    expect(await done(fleet, 'other')).toBe(STREAMS);
    expect(await done(fleet, 'slow')).toBe(0);
    expect(slowActive).toBeGreaterThan(0);
    expect(slowActive).toBeLessThanOrEqual(2);
    expect(delays.pending.length).toBeGreaterThan(0);

    // Let it answer: its runs complete too.
    fleet.sim.setFaults({ apikey: SLOW.apikey });
    delays.releaseAll();
    await fleet.serve.dispatcher.drained(fleet.app.pool, 5);
    for (let i = 20; i < 40 && (await done(fleet, 'slow')) < STREAMS; i++) {
      fleet.clock.set(T0 + i * MINUTE);
      await fleet.tick();
    }
    expect(await done(fleet, 'slow')).toBe(STREAMS);
  });
});

const REFUSED_MSG =
  'the source refuses the credentials: nothing is sent to it until its pause ends, and the pause grows while it keeps refusing (fix its credentials)';
const FAILING_MSG = 'the source is failing: nothing is sent to it until its pause ends, and the pause grows while it keeps failing';
const RECOVERED_MSG = 'the source answers again: its streams are scheduled as before';
