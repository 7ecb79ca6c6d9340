/**
 * Core API to PostgreSQL end to end: the CLI as a child process, the simulator
 * as a real HTTP server, and a real PostgreSQL database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { TestClock } from '../support/harness.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';

const TENANT = { apikey: 'e2e-key-Zq9', username: 'e2e.user', password: 'e2e-pass-Wx7', variant: 'core' as const };
const NO_HEADERS = { apikey: 'e2e-key-nohdr', username: 'e2e.user2', password: 'e2e-pass-2', variant: 'core' as const };
const SIZES = {
  customers: 20_000,
  companies: 3,
  appointments: 450,
  orders: 300,
  memberships: 120,
  membershipprograms: 6,
  giftcertificates: 230,
  products: 40,
  services: 25,
  employees: 12,
};

let sim: Simulator;
let db: TestDatabase;
// The simulator stamps ModifiedOn and pmsync reads its clock from this one, moved by hand between runs.
const clock = new TestClock('2026-03-02T10:00:00.000Z');

const env = (extra: Record<string, string> = {}) =>
  cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), ...extra });

function source(name: string, t: { apikey: string; username: string; password: string }, extra: Record<string, unknown> = {}) {
  return {
    name,
    kind: 'core',
    baseUrl: sim.coreBaseUrl(),
    apikey: t.apikey,
    username: t.username,
    password: t.password,
    lagSeconds: 0,
    ...extra,
  };
}

/** List requests the simulator saw for one apikey since `from`, per path. */
function listRequests(apikey: string, from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of sim.stats().requests.slice(from)) {
    if (r.apikey !== apikey || r.method !== 'GET') continue;
    const resource = r.path.replace(/^\/api\/v1\//, '');
    out[resource] = (out[resource] ?? 0) + 1;
  }
  return out;
}

async function count(table: string, src: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE source = $1`, [src]);
  return r.rows[0]!.n;
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 7,
    now: clock.now,
    tenants: [
      { ...TENANT, sizes: SIZES },
      { ...NO_HEADERS, sizes: { customers: 1_000, companies: 2, appointments: 250 }, dataHeaders: false },
    ],
  });
  db = await createTestDatabase();
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync sync against the Core simulator', () => {
  let config: string;
  beforeAll(() => {
    config = writeConfig({ sources: [source('clinic', TENANT)] });
  });

  it('full sync lands every list with the minimum number of requests', async () => {
    const from = sim.stats().requests.length;
    const res = await runCli(['--config', config, 'sync'], env());
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const tenant = sim.tenant(TENANT.apikey);
    for (const s of REST_STREAMS) {
      expect(await count(s.table.name, 'clinic'), s.resource).toBe(tenant.count(s.resource as never));
    }
    const seen = listRequests(TENANT.apikey, from);
    expect(seen.customers).toBe(200); // ceil(20000 / 100), Data* headers present
    for (const s of REST_STREAMS) {
      const n = tenant.count(s.resource as never);
      // giftcertificates has no Data* headers: an exact multiple of 100 costs one empty page more
      expect(seen[s.resource], s.resource).toBeLessThanOrEqual(Math.max(1, Math.ceil(n / 100)) + 1);
    }
    const ids = await db.pool.query(`SELECT count(DISTINCT id)::int AS n, count(*)::int AS total FROM customers WHERE source = 'clinic'`);
    expect(ids.rows[0]).toEqual({ n: 20_000, total: 20_000 });
  });

  it('a second run with no changes sends exactly one request per incremental stream', async () => {
    const from = sim.stats().requests.length;
    const res = await runCli(['--config', config, 'sync'], env());
    expect(res.code).toBe(0);
    const seen = listRequests(TENANT.apikey, from);
    const tenant = sim.tenant(TENANT.apikey);
    for (const s of REST_STREAMS) {
      const expected =
        s.mode === 'incremental'
          ? 1
          : Math.ceil(tenant.count(s.resource as never) / 100) +
            (s.resource === 'giftcertificates' && tenant.count('giftcertificates') % 100 === 0 ? 1 : 0);
      expect(seen[s.resource], s.resource).toBe(expected);
    }
    expect(res.stdout).toMatch(
      /clinic\/customers: succeeded, incremental, 1 page\(s\), 1 request\(s\), 0 inserted, 0 updated, 0 unchanged/,
    );
  });

  it('picks up changed and new records on the next incremental run', async () => {
    const tenant = sim.tenant(TENANT.apikey);
    const touched = tenant.touch('customers', 30);
    const created = [tenant.create('customers', { FirstName: 'Newcomer' }), tenant.create('customers', { FirstName: 'Newcomer' })];
    tenant.update('customers', String(touched[0]!.CustomerId), { LastName: 'Changed-Name' });
    clock.advance(1_100); // ModifiedOn has whole seconds: the next run starts a second after the change
    const res = await runCli(['--config', config, 'sync', '--resource', 'customers'], env());
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/clinic\/customers: succeeded, incremental, 1 page\(s\), 1 request\(s\), 2 inserted, 30 updated/);
    const row = await db.pool.query(`SELECT last_name, raw->>'LastName' AS raw_last FROM customers WHERE source = 'clinic' AND id = $1`, [
      touched[0]!.CustomerId,
    ]);
    expect(row.rows[0]).toEqual({ last_name: 'Changed-Name', raw_last: 'Changed-Name' });
    const fresh = await db.pool.query(`SELECT count(*)::int AS n FROM customers WHERE source = 'clinic' AND id = ANY($1)`, [
      created.map((c) => c.CustomerId),
    ]);
    expect(fresh.rows[0].n).toBe(2);
  });

  it('sets a wrongly typed record aside with its reason while its page lands, and clears it when fixed', async () => {
    const tenant = sim.tenant(TENANT.apikey);
    const [bad, good] = tenant.touch('customers', 2);
    tenant.update('customers', String(bad!.CustomerId), { IsActive: 'yes' as unknown as boolean });
    clock.advance(1_100); // ModifiedOn has whole seconds: the next run starts a second after the change
    const res = await runCli(['--config', config, 'sync', '--resource', 'customers'], env());
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/1 rejected/);
    const q = await db.pool.query(`SELECT record_id, reason, raw->>'IsActive' AS v FROM pmsync.quarantine WHERE source = 'clinic'`);
    expect(q.rows).toEqual([{ record_id: bad!.CustomerId, reason: expect.stringMatching(/^IsActive: .*boolean/), v: 'yes' }]);
    const landed = await db.pool.query(
      `SELECT synced_at > now() - interval '1 minute' AS fresh FROM customers WHERE source = 'clinic' AND id = $1`,
      [good!.CustomerId],
    );
    expect(landed.rows[0].fresh).toBe(true);

    const status = await runCli(['--config', config, 'status', '--json'], env());
    const parsed = JSON.parse(status.stdout);
    expect(parsed[0].resources.find((r: { resource: string }) => r.resource === 'customers').quarantined).toBe(1);

    tenant.update('customers', String(bad!.CustomerId), { IsActive: true });
    clock.advance(1_100); // ModifiedOn has whole seconds: the next run starts a second after the change
    await runCli(['--config', config, 'sync', '--resource', 'customers'], env());
    const after = await db.pool.query(`SELECT count(*)::int AS n FROM pmsync.quarantine WHERE source = 'clinic'`);
    expect(after.rows[0].n).toBe(0);
  });

  it('lists without Data* headers are read until a short page', async () => {
    const cfg = writeConfig({ sources: [source('nohdr', NO_HEADERS, { streams: ['customers', 'appointments', 'companies'] })] });
    const from = sim.stats().requests.length;
    const res = await runCli(['--config', cfg, 'sync'], env());
    expect(res.code).toBe(0);
    expect(await count('customers', 'nohdr')).toBe(1000);
    expect(await count('appointments', 'nohdr')).toBe(250);
    const seen = listRequests(NO_HEADERS.apikey, from);
    expect(seen.customers).toBe(11); // 10 full pages, then an empty one proves the end
    expect(seen.appointments).toBe(3); // 100, 100, 50
  });

  it('sends the Basic value as api_key when the gateway cannot carry headers', async () => {
    const cfg = writeConfig({ sources: [source('querycreds', TENANT, { credentialsIn: 'query', streams: ['companies'] })] });
    const res = await runCli(['--config', cfg, 'sync'], env());
    expect(res.code).toBe(0);
    expect(await count('companies', 'querycreds')).toBe(SIZES.companies);
  });

  it('a 401 exits 4, names the source and what to check, and prints no secret', async () => {
    const cfg = writeConfig({ sources: [source('clinic', { ...TENANT, password: 'wrong-Pa55word' })] });
    const res = await runCli(['--config', cfg, 'sync', '--resource', 'customers'], env({ LOG_LEVEL: 'info' }));
    expect(res.code).toBe(4);
    const out = res.stdout + res.stderr;
    expect(out).toMatch(/source "clinic".*401/);
    expect(out).toMatch(
      /Check the gateway key and the API user of source "clinic" \(apikey, username and password in sources\[0\] of \S+\)/,
    );
    for (const secret of ['wrong-Pa55word', TENANT.apikey, Buffer.from(`${TENANT.username}:wrong-Pa55word`).toString('base64')])
      expect(out).not.toContain(secret);
  });
});
