/**
 * `pmsync resync` as a child process against the simulator: one record by id,
 * a window since a date, and a full pass that marks what the API no longer
 * returns; the quota reserve it may spend; the lock it shares with serve.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type TenantHandle } from '../../simulator/index.ts';
import { keyFingerprint } from '../../src/state/quota.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';

const TENANT = { apikey: 'resync-key-P4', username: 'resync.user', password: 'resync-pass-M1', variant: 'core' as const };
const SIZES = {
  customers: 300,
  companies: 2,
  appointments: 60,
  orders: 80,
  memberships: 20,
  membershipprograms: 3,
  giftcertificates: 10,
  products: 5,
  services: 5,
  employees: 4,
};
const HOLDER = fileURLToPath(new URL('../scheduler/support/hold-lock.ts', import.meta.url));

let sim: Simulator;
let tenant: TenantHandle;
let db: TestDatabase;
let config: string;

const cli = (...args: string[]) => runCli(['--config', config, ...args], cliEnv({ DATABASE_URL: db.url }));
const customer = async (id: string) =>
  (
    await db.pool.query<{ first_name: string; not_seen_since: Date | null }>(
      `SELECT first_name, not_seen_since FROM customers WHERE source = 'clinic' AND id = $1`,
      [id],
    )
  ).rows[0];

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, tenants: [{ ...TENANT, sizes: SIZES }] });
  tenant = sim.tenant(TENANT.apikey);
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
  });
});
afterAll(async () => sim?.close());
beforeEach(async () => {
  db = await createTestDatabase();
  const first = await cli('sync', '--resource', 'customers', 'orders');
  expect(first.code, first.stderr).toBe(0);
});
afterEach(async () => db.drop());

describe('pmsync resync', () => {
  it('--id refetches one record, and keeps but marks a record the API answers 404 for', async () => {
    const [a, b] = tenant.list('customers', { limit: 2 }) as Array<{ CustomerId: string }>;
    tenant.update('customers', a!.CustomerId, { FirstName: 'Renamed' });
    const fetched = await cli('resync', 'customers', '--id', a!.CustomerId);
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(fetched.stdout).toContain(`clinic/customers ${a!.CustomerId}: updated`);
    expect((await customer(a!.CustomerId))!.first_name).toBe('Renamed');

    tenant.remove('customers', b!.CustomerId);
    const gone = await cli('resync', 'customers', '--id', b!.CustomerId);
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.stdout).toMatch(/answered 404/);
    expect((await customer(b!.CustomerId))!.not_seen_since).not.toBeNull();
  });

  it('--since re-reads the changes after a date, spending the quota reserve scheduled syncs may not touch', async () => {
    const changed = tenant.touch('orders', 5) as Array<{ OrderId: string }>;
    // Leave only the reserve: 950 of 1000 used, scheduled syncs stop at 900.
    const day = new Date().toISOString().slice(0, 10);
    await db.pool.query(`UPDATE pmsync.quota_usage SET used = 950 WHERE key_id = $1 AND quota_day = $2`, [
      keyFingerprint(TENANT.apikey),
      day,
    ]);
    // The allowance is spent: the check waits, as planned (orders was checked today, so nothing stalled).
    const refused = await cli('sync', '--resource', 'orders');
    expect(refused.code, refused.stdout + refused.stderr).toBe(0);
    expect(refused.stdout).toMatch(/Daily allowance for source "clinic" is used up/);

    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const res = await cli('resync', 'orders', '--since', yesterday);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^clinic\/orders: succeeded, incremental, \d+ page\(s\), \d+ request\(s\), 0 inserted, 5 updated/m);
    const ids = (
      await db.pool.query<{ id: string }>(
        `SELECT id FROM orders WHERE run_id = (SELECT max(id) FROM pmsync.runs WHERE resource = 'orders')`,
      )
    ).rows
      .map((r) => r.id)
      .sort();
    expect(ids).toEqual(changed.map((c) => c.OrderId).sort());
  });

  it('--since later than what the stream has read reads from its cursor, so no change is skipped', async () => {
    const cursor = (
      await db.pool.query<{ cursor: Date }>(`SELECT cursor FROM pmsync.sync_state WHERE source = 'clinic' AND resource = 'orders'`)
    ).rows[0]!.cursor;
    await db.pool.query(`UPDATE pmsync.sync_state SET cursor = cursor - interval '2 days' WHERE source = 'clinic' AND resource = 'orders'`);
    const res = await cli('resync', 'orders', '--since', new Date(cursor.getTime() - 60_000).toISOString());
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/has read changes only up to .*; reading from there/);
    const run = (
      await db.pool.query<{ window_start: Date }>(`SELECT window_start FROM pmsync.runs WHERE resource = 'orders' ORDER BY id DESC LIMIT 1`)
    ).rows[0]!;
    expect(run.window_start.getTime()).toBe(cursor.getTime() - 2 * 86_400_000);
  });

  it('--full marks rows the API no longer returns, never deletes them, and a later pass that sees a row clears its mark', async () => {
    const [gone, back] = tenant.list('customers', { limit: 2 }) as Array<{ CustomerId: string }>;
    const stored = tenant.count('customers');
    tenant.remove('customers', gone!.CustomerId);
    // As if an earlier pass had missed it: the API still returns it, so this pass clears the mark.
    await db.pool.query(`UPDATE customers SET not_seen_since = now() - interval '1 day' WHERE source = 'clinic' AND id = $1`, [
      back!.CustomerId,
    ]);

    const res = await cli('resync', 'customers', '--full');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^clinic\/customers: succeeded, full, .*; 1 row\(s\) no longer returned by the API marked not_seen_since$/m);
    expect((await customer(gone!.CustomerId))!.not_seen_since).not.toBeNull();
    expect((await customer(back!.CustomerId))!.not_seen_since).toBeNull();
    const counts = (
      await db.pool.query<{ total: number; marked: number }>(
        `SELECT count(*)::int AS total, count(not_seen_since)::int AS marked FROM customers`,
      )
    ).rows[0]!;
    expect(counts).toEqual({ total: stored, marked: 1 });
  });

  it('waits for, then gives up on, a run of the same stream in another process; a scheduled sync skips it', async () => {
    const holder = spawn(process.execPath, [HOLDER, db.url, 'clinic', 'customers', '0']);
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    try {
      const res = await cli('resync', 'customers', '--full', '--wait', '1');
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/clinic\/customers is being synced by another pmsync process and was still busy after 1 s/);
      const sync = await cli('sync', '--resource', 'customers', 'orders');
      expect(sync.code, sync.stderr).toBe(0);
      expect(sync.stdout).toMatch(/^clinic\/customers: skipped/m);
      expect(sync.stdout).toMatch(/^clinic\/orders: succeeded/m);
    } finally {
      holder.stdin.end();
      await new Promise((r) => holder.on('exit', r));
    }
    const after = await cli('resync', 'customers', '--full', '--wait', '1');
    expect(after.code, after.stderr).toBe(0);
  });

  it('refuses unclear requests with exit 2 and says why', async () => {
    expect((await cli('resync', 'customers')).stderr).toMatch(/exactly one of --id ID, --since DATE or --full/);
    const unknown = await cli('resync', 'widgets', '--full');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no configured source has a resource "widgets"; resources: .*customers/);
    expect((await cli('resync', 'companies', '--id', 'x')).stderr).toMatch(
      /companies has no single-record endpoint in the API; use "pmsync resync companies --since DATE" instead/,
    );
    expect((await cli('resync', 'orders', '--since', 'last tuesday')).code).toBe(2);
  });
});
