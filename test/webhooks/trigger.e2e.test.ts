/**
 * Notifications as triggers, end to end: `pmsync serve` as a child process on
 * the real clock, registered at the simulator with the CLI. A notification
 * marks its stream for a check, which reads every change since the last one:
 * the record is never fetched alone, and a burst costs a page or two.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { eventually, kill, startServeCli, type ServeProcess } from '../serve/support.ts';

const TENANT = { apikey: 'trigger-key-T9', username: 'trigger.user', password: 'trigger-pass-U1', variant: 'core' as const };

let sim: Simulator;
let db: TestDatabase;
let config: string;
let serve: ServeProcess;
const env = () => cliEnv({ DATABASE_URL: db.url });

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, tenants: [{ ...TENANT, sizes: { customers: 300, appointments: 200, orders: 100 } }] });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
      },
    ],
    // Decide every second and read a notification at once, so the test runs on the real clock.
    schedules: { tickSeconds: 1, debounceSeconds: 0 },
  });
  serve = await startServeCli(['--config', config], env());
  await eventually(async () => {
    const r = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pmsync.sync_state WHERE cursor IS NOT NULL AND "window" IS NULL`,
    );
    return r.rows[0]!.n === 10 ? true : undefined;
  }, 'every first pass');
  const registered = await runCli(['--config', config, 'webhooks', 'register', '--source', 'clinic', '--url', serve.url, '--yes'], env());
  expect(registered.code, registered.stderr).toBe(0);
});

afterAll(async () => {
  if (serve) {
    kill(serve.child);
    await serve.exited;
  }
  await sim?.close();
  await db?.drop();
});

const listRequests = (from: number, resource: string) =>
  sim
    .stats()
    .requests.slice(from)
    .filter((r) => r.path === `/api/v1/${resource}`);
const recordRequests = (from: number) =>
  sim
    .stats()
    .requests.slice(from)
    .filter((r) => /\/api\/v1\/(customers|orders)\/[^/]+$|\/appointments\/[^/]+\/details$/.test(r.path));

describe('webhook notifications under serve', () => {
  it('trigger a check of their stream: the change lands without fetching the record alone', async () => {
    const from = sim.stats().requests.length;
    const [customer] = sim.tenant(TENANT.apikey).list('customers').slice(7, 8);
    sim.tenant(TENANT.apikey).update('customers', String(customer!.CustomerId), { FirstName: 'Triggered' });
    await eventually(async () => {
      const r = await db.pool.query<{ first_name: string }>(`SELECT first_name FROM customers WHERE id = $1`, [customer!.CustomerId]);
      return r.rows[0]?.first_name === 'Triggered' ? true : undefined;
    }, 'the notified change');
    expect(recordRequests(from)).toEqual([]);
    expect(listRequests(from, 'customers').length).toBeGreaterThanOrEqual(1);
    const events = await db.pool.query(`SELECT outcome FROM pmsync.webhook_events WHERE record_id = $1`, [customer!.CustomerId]);
    expect(events.rows).toEqual([{ outcome: 'notified' }]);
    const runs = await db.pool.query(`SELECT purpose FROM pmsync.runs WHERE resource = 'customers' ORDER BY id DESC LIMIT 1`);
    expect(runs.rows).toEqual([{ purpose: 'webhook' }]);
  });

  it('read a burst of 120 notified orders with a few list requests, never one per order', async () => {
    const from = sim.stats().requests.length;
    const changed = sim
      .tenant(TENANT.apikey)
      .touch('orders', 80)
      .map((o) => String(o.OrderId));
    const created = Array.from({ length: 40 }, () => String(sim.tenant(TENANT.apikey).create('orders').OrderId));
    const ids = [...changed, ...created];
    await sim.webhooksSettled();
    await eventually(async () => {
      const r = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM orders WHERE source = 'clinic' AND id = ANY($1) AND synced_at > now() - interval '1 minute'`,
        [ids],
      );
      return r.rows[0]!.n === ids.length ? true : undefined;
    }, 'every notified order');
    expect(recordRequests(from)).toEqual([]);
    expect(listRequests(from, 'orders').length).toBeLessThanOrEqual(6);
    const ledger = await runCli(['--config', config, 'status', '--json'], env());
    const [status] = JSON.parse(ledger.stdout) as Array<{ budget: { spent: { webhook: number } } }>;
    expect(status!.budget.spent.webhook).toBeGreaterThanOrEqual(2);
  });
});
