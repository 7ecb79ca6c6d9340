/**
 * Notified checks of `webhooks receive` with no serve, on an injected clock
 * that pmsync and the simulator share: the receiver over real HTTP, the
 * simulator delivering real webhooks, PostgreSQL, and the scheduling and
 * stream locks. Requests are counted with the simulator's own log.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import type { App } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import { acquireStreamLock, shardLeases } from '../../src/state/locks.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { syncSource } from '../../src/sync/sync-source.ts';
import { EVENT_NAMES } from '../../src/webhooks/events.ts';
import { refreshSuperviseSeconds, startWebhooks, type NotifiedChecks, type Webhooks } from '../../src/webhooks/index.ts';
import { openJobQueue, type JobQueue } from '../../src/queue.ts';
import { RegistrationApi, registrationUrl } from '../../src/webhooks/registration.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { writeConfig } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreSourceEntry, openTestApp } from './support.ts';

const TENANT = { apikey: 'notified-key-Q3', username: 'notified.user', password: 'notified-pass-R4', variant: 'core' as const };
const DEBOUNCE_MS = 60_000;

class Clock {
  ms = Date.now();
  now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}

const clock = new Clock();
let sim: Simulator;
let db: TestDatabase;
let app: App;
let jobs: JobQueue | undefined;
let webhooks: Webhooks;
let checks: NotifiedChecks;
let server: Server;
let source: CoreSourceConfig;

const tenant = () => sim.tenant(TENANT.apikey);
const requestsSince = (from: number) => sim.stats().requests.slice(from);
const recordRequests = (from: number) =>
  requestsSince(from).filter((r) => /\/api\/v1\/(customers|orders)\/[^/]+$|\/appointments\/[^/]+\/details$/.test(r.path));

/** Renames `n` customers at the API and waits until their notifications are stored. */
async function rename(n: number, offset: number, name: string): Promise<string[]> {
  // Later than the last check's claim: a notification received at its instant counts as covered by it.
  clock.advance(1_000);
  const ids = tenant()
    .list('customers')
    .slice(offset, offset + n)
    .map((c) => String(c.CustomerId));
  const sent = sim.stats().webhookDeliveries.length;
  for (const id of ids) tenant().update('customers', id, { FirstName: name });
  await sim.webhooksSettled();
  // Every test below reads these notifications as stored at this instant: a delivery that failed (the receiver
  // slower than the attempt's timeout, every attempt) would show up later as a check that was never due.
  const states = sim
    .stats()
    .webhookDeliveries.slice(sent)
    .map((d) => d.state);
  expect(states, 'every webhook delivery of the renames reached the receiver').toEqual(ids.map(() => 'delivered'));
  return ids;
}

async function named(ids: string[], name: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM customers WHERE source = 'clinic' AND id = ANY($1) AND first_name = $2`,
    [ids, name],
  );
  return r.rows[0]!.n;
}

const webhookSpend = async () => (await app.ledgerFor(source).snapshot()).byPurpose.webhook;

beforeAll(async () => {
  sim = await startSimulator({
    now: clock.now,
    seed: 31,
    tenants: [{ ...TENANT, sizes: { customers: 120, appointments: 40, orders: 30 } }],
    webhookTiming: { attemptTimeoutMs: scaled(2_000), retryIntervalMs: 400, maxAttempts: 3 },
  });
  db = await createTestDatabase();
  const file = writeConfig({
    databaseUrl: db.url,
    sources: [coreSourceEntry('clinic', sim.coreBaseUrl(), TENANT)],
    schedules: { debounceSeconds: DEBOUNCE_MS / 1000, notifiedWithinMinutes: 10 },
  });
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: {} });
  app = await openTestApp(config, { now: clock.now });
  source = app.config.sources[0] as CoreSourceConfig;
  // The nightly cron job's run: every stream read once.
  const first = await syncSource(app.ctx, source);
  expect(first.failures).toEqual([]);

  jobs = await openJobQueue(app, { mode: 'work', superviseSeconds: refreshSuperviseSeconds(config.webhooks), connections: 4 });
  webhooks = await startWebhooks(app, jobs, { checkNotified: true, manualTicks: true });
  checks = webhooks.checks!;
  server = createServer((req, res) => webhooks.receiver.handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = newToken();
  await addProvisionalSecret(app.pool, 'clinic', hashToken(token), clock.now());
  await activateSecret(app.pool, 'clinic', hashToken(token), clock.now(), clock.now());
  const api = new RegistrationApi(app.ctx.clientFor(source));
  for (const event of EVENT_NAMES) await api.create(event, registrationUrl(url, 'clinic', token));
});

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await webhooks?.stop();
  await jobs?.stop();
  await app?.close();
  await sim?.close();
  await db?.drop();
});

describe('notified checks of webhooks receive, with no serve', () => {
  it('read a burst with one check after the debounce, spent as webhook requests, and nothing before', async () => {
    expect(checks.mode()).toBe('here');
    const from = sim.stats().requests.length;
    const spentBefore = await webhookSpend();
    const ids = await rename(30, 0, 'Burst');
    const events = await db.pool.query(`SELECT outcome, count(*)::int AS n FROM pmsync.webhook_events GROUP BY outcome`);
    expect(events.rows).toEqual([{ outcome: 'notified', n: 30 }]);

    clock.advance(DEBOUNCE_MS - 5_000);
    expect(await checks.tick()).toEqual([]);
    expect(requestsSince(from)).toEqual([]);
    expect(await named(ids, 'Burst')).toBe(0);

    clock.advance(10_000);
    const jobs = await checks.tick();
    expect(jobs.map((j) => [j.resource, j.purpose])).toEqual([['customers', 'webhook']]);
    expect(await named(ids, 'Burst')).toBe(30);
    // 30 notified changes fit one list page: one request, never one per record.
    expect(requestsSince(from).map((r) => r.path)).toEqual(['/api/v1/customers']);
    expect(recordRequests(from)).toEqual([]);
    expect((await webhookSpend()) - spentBefore).toBe(1);
    const runs = await db.pool.query(`SELECT purpose FROM pmsync.runs WHERE resource = 'customers' ORDER BY id DESC LIMIT 1`);
    expect(runs.rows).toEqual([{ purpose: 'webhook' }]);

    // The check covered every notification: nothing is due after it.
    clock.advance(DEBOUNCE_MS * 2);
    expect(await checks.tick()).toEqual([]);
    expect(requestsSince(from)).toHaveLength(1);
  });

  it('leave notified streams to a serve replica deciding scheduling shards, and take over once it is gone', async () => {
    const serve = shardLeases(app.pool);
    expect((await serve.sync()).size).toBeGreaterThan(0);
    try {
      const from = sim.stats().requests.length;
      const ids = await rename(5, 40, 'Served');
      clock.advance(DEBOUNCE_MS + 5_000);
      expect(await checks.tick()).toEqual([]);
      expect(checks.mode()).toBe('serve');
      expect(requestsSince(from)).toEqual([]);
      expect(await named(ids, 'Served')).toBe(0);

      await serve.release();
      const jobs = await checks.tick();
      expect(checks.mode()).toBe('here');
      expect(jobs.map((j) => j.resource)).toEqual(['customers']);
      expect(await named(ids, 'Served')).toBe(5);
      expect(recordRequests(from)).toEqual([]);
    } finally {
      await serve.release();
    }
  });

  it('spend nothing while the budget is used up, even past the bound; with budget again, read the notifications at once', async () => {
    const ledger = app.ledgerFor(source);
    const budget = ledger.settings.budget;
    (ledger.settings as { budget: number }).budget = (await ledger.snapshot()).budgetUsed;
    const from = sim.stats().requests.length;
    let ids: string[];
    try {
      ids = await rename(4, 50, 'Budget');
      clock.advance(11 * 60_000);
      expect(await checks.tick()).toEqual([]);
      expect(requestsSince(from)).toEqual([]);
    } finally {
      (ledger.settings as { budget: number }).budget = budget;
    }
    const jobs = await checks.tick();
    expect(jobs.map((j) => [j.resource, j.reason])).toEqual([['customers', 'notified-max-wait']]);
    expect(await named(ids, 'Budget')).toBe(4);
  });

  it('hand the notifications back when the cron sync holds the stream, and check them at a later tick', async () => {
    const lock = await acquireStreamLock(app.pool, 'clinic', 'customers');
    expect(lock).not.toBeNull();
    const from = sim.stats().requests.length;
    let ids: string[];
    try {
      ids = await rename(3, 60, 'Locked');
      clock.advance(DEBOUNCE_MS + 5_000);
      expect((await checks.tick()).map((j) => j.resource)).toEqual(['customers']);
      expect(requestsSince(from)).toEqual([]);
      const row = await db.pool.query(`SELECT last_outcome FROM pmsync.stream_schedule WHERE source = 'clinic' AND resource = 'customers'`);
      expect(row.rows).toEqual([{ last_outcome: 'locked' }]);
    } finally {
      await lock!.release();
    }
    clock.advance(15_000);
    expect((await checks.tick()).map((j) => j.resource)).toEqual(['customers']);
    expect(await named(ids, 'Locked')).toBe(3);
    expect(recordRequests(from)).toEqual([]);
  });
});
