/**
 * Webhooks end to end, as an operator runs them: the CLI as child processes
 * (register, list, rotate-secret, delete, receive), the simulator delivering
 * real webhooks, and a real PostgreSQL database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, spawnCli, waitExit, writeConfig, type CliResult } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from './support.ts';

const TENANT = { apikey: 'wh-e2e-key-K5', username: 'wh.e2e', password: 'wh-e2e-pass-L6', variant: 'core' as const };
const SUBSET = {
  apikey: 'wh-e2e-sub-M7',
  username: 'wh.e2e.sub',
  password: 'wh-e2e-pass-N8',
  variant: 'subset' as const,
  subsetName: 'Part',
};

/** Hang guard on a receiver's start, for an unloaded machine (scaled by waitFor). */
const RECEIVER_START_MS = 20_000;
const RETRY_INTERVAL_MS = 400;

let sim: Simulator;
let db: TestDatabase;
let config: string;
let env: NodeJS.ProcessEnv;
const outputs: string[] = [];

async function cli(...args: string[]): Promise<CliResult> {
  const res = await runCli(['--config', config, ...args], env);
  outputs.push(res.stdout, res.stderr);
  return res;
}

type Receiver = ReturnType<typeof spawnCli>;

/** Starts `pmsync webhooks receive` and resolves with its port once it listens. */
async function startReceiver(port = 0): Promise<{ child: Receiver; port: number }> {
  const child = spawnCli(['--config', config, 'webhooks', 'receive', '--port', String(port)], env);
  const found = await waitFor(
    () => /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(child.output.stdout)?.[1] ?? (child.exitCode !== null ? 'exited' : undefined),
    'the receiver to listen',
    RECEIVER_START_MS,
  );
  if (found === 'exited') throw new Error(`receiver exited: ${child.output.stderr}`);
  return { child, port: Number(found) };
}

async function stop(child: Receiver, signal: NodeJS.Signals = 'SIGTERM'): Promise<CliResult> {
  const exited = waitExit(child);
  child.kill(signal);
  const res = await exited;
  outputs.push(res.stdout, res.stderr);
  return res;
}

const tenant = () => sim.tenant(TENANT.apikey);
const fetchesOf = (id: string, from: number) =>
  sim
    .stats()
    .requests.slice(from)
    .filter((r) => r.path === `/api/v1/customers/${id}`).length;

async function firstName(id: string): Promise<string | undefined> {
  const r = await db.pool.query<{ first_name: string }>('SELECT first_name FROM customers WHERE source = $1 AND id = $2', ['clinic', id]);
  return r.rows[0]?.first_name;
}

async function jobState(id: string): Promise<string | undefined> {
  const r = await db.pool.query<{ state: string }>(
    `SELECT state FROM pgboss.job WHERE name = 'pmsync-refresh' AND singleton_key = $1 ORDER BY created_on DESC LIMIT 1`,
    [`clinic:customers:${id}`],
  );
  return r.rows[0]?.state;
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 9,
    tenants: [{ ...TENANT, sizes: { customers: 40 } }, SUBSET],
    webhookTiming: {
      // An acknowledgement is never so slow that the API sends the event again: the tests count duplicates.
      attemptTimeoutMs: scaled(15_000),
      retryIntervalMs: RETRY_INTERVAL_MS,
      // A failed delivery is retried for longer than a receiver may take to start, so a restart
      // is never a race between the API giving up and a busy machine starting a process.
      maxAttempts: Math.ceil((2 * scaled(RECEIVER_START_MS)) / RETRY_INTERVAL_MS),
    },
  });
  db = await createTestDatabase();
  const source = { kind: 'core', baseUrl: sim.coreBaseUrl(), lagSeconds: 0, requestTimeoutMs: scaled(1_000) };
  config = writeConfig({
    sources: [
      {
        ...source,
        name: 'clinic',
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
        webhook: { tenantId: 'sim01_1000' },
      },
      {
        ...source,
        kind: 'subset',
        name: 'part',
        baseUrl: sim.subsetBaseUrl('Part'),
        apikey: SUBSET.apikey,
        username: SUBSET.username,
        password: SUBSET.password,
      },
    ],
    // Each delivery fetches its record (the path these tests are about); a
    // refresh whose worker died is retried 3 s (scaled) after it started (300 s by default).
    webhooks: { refresh: 'record', expireSeconds: Math.ceil(scaled(3_000) / 1000), retryDelaySeconds: 1 },
  });
  env = cliEnv({ DATABASE_URL: db.url });
});

afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync webhooks', () => {
  let receiver: { child: Receiver; port: number };
  let publicUrl: string;

  it('registers once per event, only when confirmed, idempotently; refuses Subset sources', async () => {
    receiver = await startReceiver();
    publicUrl = `http://127.0.0.1:${receiver.port}`;

    const unconfirmed = await cli('webhooks', 'register', '--source', 'clinic', '--url', publicUrl);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stdout).toContain('create  Patient.Created');
    expect(unconfirmed.stderr).toMatch(/no terminal to confirm.*--yes/);
    expect(tenant().webhooks()).toEqual([]);

    const subset = await cli('webhooks', 'register', '--source', 'part', '--url', publicUrl, '--yes');
    expect(subset.code).toBe(2);
    expect(subset.stderr).toMatch(/subset source.*sends no webhooks/);

    const first = await cli('webhooks', 'register', '--source', 'clinic', '--url', publicUrl, '--yes');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const regs = tenant().webhooks();
    expect(regs.map((r) => r.EventType).sort()).toEqual([
      'Appointment.Created',
      'Appointment.Updated',
      'Order.Created',
      'Order.Updated',
      'Patient.Created',
      'Patient.Updated',
    ]);
    expect(new Set(regs.map((r) => r.WebhookUrl)).size).toBe(1);
    expect(regs[0]!.WebhookUrl).toMatch(new RegExp(`^${publicUrl}/webhooks/clinic/[A-Za-z0-9_-]{43}$`));

    const again = await cli('webhooks', 'register', '--source', 'clinic', '--url', publicUrl, '--yes');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to change');
    expect(tenant().webhooks()).toEqual(regs);

    const list = await cli('webhooks', 'list', '--source', 'clinic');
    expect(list.stdout.match(/pmsync\n/g)).toHaveLength(6);
  });

  it('refreshes the record a delivery names: update in the API, new row in PostgreSQL', async () => {
    const id = tenant().list('customers')[3]!.CustomerId as string;
    const from = sim.stats().requests.length;
    tenant().update('customers', id, { FirstName: 'Webhooked' });
    await waitFor(async () => (await firstName(id)) === 'Webhooked', 'the refreshed row');
    expect(fetchesOf(id, from)).toBe(1);
  });

  it('a receiver killed after acknowledging, before refreshing, refreshes after a restart', async () => {
    const id = tenant().list('customers')[5]!.CustomerId as string;
    sim.setFaults({ timeoutRate: 1, hangMs: 20_000 }); // the refetch hangs at the API
    tenant().update('customers', id, { FirstName: 'Survivor' });
    await waitFor(async () => (await jobState(id)) === 'active', 'the refresh to start');
    const killed = await stop(receiver.child, 'SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    expect(sim.stats().webhookDeliveries.find((d) => d.payload.Url.endsWith(id))?.state).toBe('delivered');
    sim.setFaults({});
    expect(await firstName(id)).toBeUndefined();

    receiver = await startReceiver(receiver.port);
    await waitFor(async () => (await firstName(id)) === 'Survivor', 'the refresh after the restart', 40_000);
  });

  it('deliveries that failed while the receiver was down are processed once it is back', async () => {
    await stop(receiver.child);
    const id = tenant().list('customers')[7]!.CustomerId as string;
    const from = sim.stats().requests.length;
    tenant().update('customers', id, { FirstName: 'Patient' });
    const eventId = sim.stats().webhookDeliveries.find((d) => d.payload.Url.endsWith(`/${id}`))!.eventId;
    await waitFor(
      () => sim.stats().webhookAttempts.filter((a) => a.eventId === eventId && !a.ok && a.error).length >= 2,
      'two failed attempts',
    );
    receiver = await startReceiver(receiver.port);
    expect(sim.stats().webhookDeliveries.find((d) => d.eventId === eventId)!.state).not.toBe('failed');
    await waitFor(async () => (await firstName(id)) === 'Patient', 'the refreshed row');
    await sim.webhooksSettled();
    expect(fetchesOf(id, from)).toBe(1);
    const events = await db.pool.query('SELECT duplicates FROM pmsync.webhook_events WHERE record_id = $1', [id]);
    expect(events.rows).toEqual([{ duplicates: 0 }]);
  });

  it('rotate-secret moves every registration to a new token; delete --all removes them', async () => {
    const before = tenant().webhooks();
    const rotated = await cli('webhooks', 'rotate-secret', '--source', 'clinic', '--yes');
    expect(rotated.code).toBe(0);
    const after = tenant().webhooks();
    expect(after).toHaveLength(6);
    expect(after[0]!.WebhookUrl).not.toBe(before[0]!.WebhookUrl);
    expect(after.every((r) => r.WebhookUrl === after[0]!.WebhookUrl)).toBe(true);

    // Both tokens are accepted for the grace period.
    const id = tenant().list('customers')[9]!.CustomerId as string;
    tenant().update('customers', id, { FirstName: 'Rotated' });
    await waitFor(async () => (await firstName(id)) === 'Rotated', 'a delivery to the new URL');
    const body = {
      Application: 'pm',
      TenantId: 'sim01_1000',
      EventId: 'old-url-event',
      EventType: 'Patient.Updated',
      EventTimestamp: new Date().toISOString(),
      Url: `${sim.coreBaseUrl()}/customers/${id}`,
    };
    const old = await fetch(before[0]!.WebhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(old.status).toBe(200);

    const deleted = await cli('webhooks', 'delete', '--all', '--source', 'clinic', '--yes');
    expect(deleted.code).toBe(0);
    expect(tenant().webhooks()).toEqual([]);
    await stop(receiver.child);

    const tokens = [...before, ...after].map((r) => r.WebhookUrl.split('/').pop()!);
    for (const t of new Set(tokens)) for (const text of outputs) expect(text).not.toContain(t);
  });

  it('status shows the refresh backlog and dead letters', async () => {
    const res = await cli('status');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/webhook refreshes: \d+ waiting.*\d+ dead-lettered/);
  });
});
