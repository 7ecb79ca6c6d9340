/**
 * The cron-plus-receiver deployment end to end, with real processes and no
 * serve: `pmsync sync` once (the nightly cron job), then `pmsync webhooks
 * receive` running on its own, the simulator delivering real webhooks. A
 * notified change must reach PostgreSQL by a debounced check of its stream,
 * and a burst must cost one check, counted at the simulator. A serve replica
 * started later takes the notified checks over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, spawnCli, waitExit, writeConfig } from '../support/cli.ts';
import { kill, startServeCli, type ServeProcess } from '../serve/support.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from './support.ts';

/** 5 s on an idle machine: the burst's deliveries all arrive within it (PMSYNC_TEST_TIME_SCALE stretches it). */
const DEBOUNCE_SECONDS = Math.round(scaled(5_000) / 1_000);
const NOTIFIED_WITHIN_MINUTES = (DEBOUNCE_SECONDS + 15) / 60;

const TENANT = { apikey: 'alone-key-V2', username: 'alone.user', password: 'alone-pass-W3', variant: 'core' as const };

let sim: Simulator;
let db: TestDatabase;
let config: string;
let env: NodeJS.ProcessEnv;
let receiver: ReturnType<typeof spawnCli> | undefined;
let serve: ServeProcess | undefined;

const tenant = () => sim.tenant(TENANT.apikey);
const requestsSince = (from: number) => sim.stats().requests.slice(from);
const recordRequests = (from: number) =>
  requestsSince(from).filter((r) => /\/api\/v1\/(customers|orders)\/[^/]+$|\/appointments\/[^/]+\/details$/.test(r.path));
/** Notified checks this receiver ran (its info log line for each). */
const checksByReceiver = () => (receiver?.output.stderr.match(/checking a notified stream/g) ?? []).length;

async function rename(ids: string[], name: string): Promise<void> {
  for (const id of ids) tenant().update('customers', id, { FirstName: name });
  await waitFor(
    async () => {
      const r = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM customers WHERE source = 'clinic' AND id = ANY($1) AND first_name = $2`,
        [ids, name],
      );
      return r.rows[0]!.n === ids.length;
    },
    `${ids.length} customers named ${name} in PostgreSQL`,
    30_000,
  );
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 44,
    tenants: [{ ...TENANT, sizes: { customers: 150, appointments: 60, orders: 40 } }],
    webhookTiming: { attemptTimeoutMs: 2_000, retryIntervalMs: 500, maxAttempts: 10 },
  });
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
        lagSeconds: 0,
      },
    ],
    // A short debounce and tick keep the test on the real clock in seconds (the defaults are 60 s and 15 s); the
    // debounce must outlast the burst's deliveries so they are read together, so it grows on a slow machine. The
    // budget may leave a few notified changes waiting until notifiedWithinMinutes (10 by default) when its exchange
    // rate prices them below a request: a bound of 15 s past the debounce keeps that wait within the test's guards.
    schedules: { tickSeconds: 1, debounceSeconds: DEBOUNCE_SECONDS, notifiedWithinMinutes: NOTIFIED_WITHIN_MINUTES },
  });
  env = cliEnv({ DATABASE_URL: db.url });
});

afterAll(async () => {
  for (const child of [receiver, serve?.child]) {
    if (!child) continue;
    const exited = waitExit(child as ReturnType<typeof spawnCli>);
    kill(child);
    await exited;
  }
  await sim?.close();
  await db?.drop();
});

describe('a nightly cron sync and webhooks receive, with no serve', () => {
  it('the receiver says at start that it checks notified streams itself', async () => {
    const synced = await runCli(['--config', config, 'sync'], env);
    expect(synced.code, synced.stderr).toBe(0);

    receiver = spawnCli(['--config', config, 'webhooks', 'receive', '--port', '0'], { ...env, LOG_LEVEL: 'info' });
    const port = await waitFor(
      () =>
        /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(receiver!.output.stdout)?.[1] ??
        (receiver!.exitCode !== null ? 'exited' : undefined),
      'the receiver to listen',
    );
    expect(port, receiver.output.stderr).not.toBe('exited');
    await waitFor(() => receiver!.output.stdout.includes('webhooks: '), 'the mode line');
    expect(receiver.output.stdout).toContain(
      `webhooks: no serve replica schedules these sources; notified streams (customers, appointments and orders) are checked here after a ${DEBOUNCE_SECONDS} s debounce, within ${NOTIFIED_WITHIN_MINUTES} min while the budget allows`,
    );

    const registered = await runCli(
      ['--config', config, 'webhooks', 'register', '--source', 'clinic', '--url', `http://127.0.0.1:${port}`, '--yes'],
      env,
    );
    expect(registered.code, registered.stderr).toBe(0);
  });

  it('a burst of 40 notified changes lands in PostgreSQL by one check of the stream, not 40 record reads', async () => {
    const from = sim.stats().requests.length;
    const ids = tenant()
      .list('customers')
      .slice(0, 40)
      .map((c) => String(c.CustomerId));
    await rename(ids, 'Alone');
    await sim.webhooksSettled();

    expect(recordRequests(from)).toEqual([]);
    // 40 changes fit one list page; the whole burst arrives within the debounce.
    expect(requestsSince(from).map((r) => r.path)).toEqual(['/api/v1/customers']);
    const events = await db.pool.query(`SELECT outcome, count(*)::int AS n FROM pmsync.webhook_events GROUP BY outcome`);
    expect(events.rows).toEqual([{ outcome: 'notified', n: 40 }]);
    const runs = await db.pool.query(`SELECT purpose, requests FROM pmsync.runs WHERE resource = 'customers' AND purpose = 'webhook'`);
    expect(runs.rows).toEqual([{ purpose: 'webhook', requests: 1 }]);
    expect(checksByReceiver()).toBe(1);

    const status = await runCli(['--config', config, 'status', '--json'], env);
    const [detail] = JSON.parse(status.stdout) as Array<{ budget: { spent: { webhook: number } } }>;
    expect(detail!.budget.spent.webhook).toBe(1);
  });

  it('leaves notified checks to a serve replica once one runs', async () => {
    serve = await startServeCli(['--config', config], env);
    await waitFor(
      () => receiver!.output.stderr.includes('a serve replica schedules these sources and checks their notified streams'),
      'the receiver to see the serve replica',
    );
    const before = checksByReceiver();
    const ids = tenant()
      .list('customers')
      .slice(60, 63)
      .map((c) => String(c.CustomerId));
    await rename(ids, 'Served');
    expect(checksByReceiver()).toBe(before);
  });
});
