/**
 * Subset API to PostgreSQL end to end, and all three kinds of source in one
 * config file: the CLI as a child process against the simulator and a real
 * database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, SUBSET_RESOURCES, type RequestLogEntry, type Simulator } from '../../simulator/index.ts';
import { basicValue } from '../../src/api/http.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { TestClock } from '../support/harness.ts';

const SUBSET = {
  apikey: 'e2e-sub-key-Tq4',
  username: 'sub.user',
  password: 'sub-pass-Np6',
  variant: 'subset' as const,
  subsetName: 'Glow',
};
const BARE = {
  apikey: 'e2e-sub-nohdr-Mm3',
  username: 'sub.bare',
  password: 'sub-pass-Rf9',
  variant: 'subset' as const,
  subsetName: 'Bare',
};
const CORE = { apikey: 'e2e-core-key-Lw2', username: 'core.user', password: 'core-pass-Gh8', variant: 'core' as const };
const PRO = {
  token: 'e2e-mixed-pro-Xc7',
  practiceId: 610,
  sizes: { patients: 12, appointmentsPerPatient: 1, eventTypes: 2, providers: 2, waitlist: 2, waitlistSlots: 2 },
};
// Exact multiples of the page size (orders), an empty list (employees) and a short one (services).
const SIZES = { companies: 2, appointments: 130, orders: 200, employees: 0, services: 7, customers: 40 };
const SECRETS = [SUBSET, BARE, CORE].flatMap((t) => [t.apikey, t.password, basicValue(t.username, t.password)]).concat(PRO.token);

let sim: Simulator;
let db: TestDatabase;
const outputs: CliResult[] = [];
// The simulator stamps ModifiedOn and pmsync reads its clock from this one, moved by hand between runs.
const clock = new TestClock('2026-03-02T10:00:00.000Z');

function rest(
  kind: 'core' | 'subset',
  name: string,
  t: { apikey: string; username: string; password: string; subsetName?: string },
  extra: Record<string, unknown> = {},
) {
  const baseUrl = kind === 'core' ? sim.coreBaseUrl() : sim.subsetBaseUrl(t.subsetName!);
  return { kind, name, baseUrl, apikey: t.apikey, username: t.username, password: t.password, lagSeconds: 0, ...extra };
}

async function cli(config: unknown, args: string[]): Promise<CliResult> {
  const res = await runCli(
    ['--config', writeConfig(config), ...args],
    cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() }),
  );
  outputs.push(res);
  return res;
}

/** List requests per resource the simulator saw for one apikey since `from`. */
function listRequests(apikey: string, from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of sim.stats().requests.slice(from) as RequestLogEntry[]) {
    if (r.apikey !== apikey) continue;
    const resource = r.path.replace(/^.*\/api\/v1\//, '');
    out[resource] = (out[resource] ?? 0) + 1;
  }
  return out;
}

async function rowCount(table: string, source: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE source = $1`, [source]);
  return r.rows[0]!.n;
}

const TABLES: Record<string, string> = {
  companies: 'companies',
  appointments: 'appointments',
  orders: 'orders',
  employees: 'employees',
  services: 'services',
};

beforeAll(async () => {
  sim = await startSimulator({
    seed: 31,
    now: clock.now,
    tenants: [
      { ...SUBSET, sizes: SIZES },
      { ...BARE, sizes: SIZES, dataHeaders: false },
      {
        ...CORE,
        sizes: {
          customers: 30,
          companies: 1,
          appointments: 20,
          orders: 10,
          memberships: 3,
          membershipprograms: 2,
          giftcertificates: 2,
          products: 3,
          services: 2,
          employees: 2,
        },
      },
    ],
    practices: [PRO],
  });
  db = await createTestDatabase();
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync sync against the Subset simulator', () => {
  const config = () => ({ sources: [rest('subset', 'glow', SUBSET)] });

  it('syncs the five Subset resources into the Core tables, checked with GET /companies', async () => {
    const from = sim.stats().requests.length;
    const res = await cli(config(), ['sync']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const tenant = sim.tenant(SUBSET.apikey);
    for (const resource of SUBSET_RESOURCES) expect(await rowCount(TABLES[resource]!, 'glow'), resource).toBe(tenant.count(resource));
    expect(await rowCount('customers', 'glow')).toBe(0);
    // With Data* headers: 200 orders are exactly two pages; an empty list is one request.
    expect(listRequests(SUBSET.apikey, from)).toEqual({ companies: 1, appointments: 2, orders: 2, employees: 1, services: 1 });
    const status = await cli(config(), ['status', '--check']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/source glow \(subset\): \d+\/1000 requests used/);
    expect(status.stdout).toContain('connectivity ok (GET /companies)');
    expect(status.stdout).toMatch(/ orders\s+200 rows/);
  });

  it('a rerun is incremental: one request per incremental list, and picks up changed and new records', async () => {
    let from = sim.stats().requests.length;
    expect((await cli(config(), ['sync'])).code).toBe(0);
    expect(listRequests(SUBSET.apikey, from)).toEqual({ companies: 1, appointments: 1, orders: 1, employees: 1, services: 1 });

    const tenant = sim.tenant(SUBSET.apikey);
    const touched = tenant.touch('orders', 4);
    tenant.create('orders');
    clock.advance(1_100); // ModifiedOn has whole seconds: the next run starts a second after the change
    from = sim.stats().requests.length;
    const res = await cli(config(), ['sync', '--resource', 'orders']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/glow\/orders: succeeded, incremental, 1 page\(s\), 1 request\(s\), 1 inserted, 4 updated/);
    expect(listRequests(SUBSET.apikey, from)).toEqual({ orders: 1 });
    const row = await db.pool.query('SELECT raw FROM orders WHERE source = $1 AND id = $2', ['glow', touched[0]!.OrderId]);
    expect(row.rows[0].raw).toEqual(tenant.get('orders', String(touched[0]!.OrderId)));
  });

  it('pages a list without Data* headers until a short page, paying one empty page for an exact multiple', async () => {
    const from = sim.stats().requests.length;
    const res = await cli({ sources: [rest('subset', 'bare', BARE)] }, ['sync']);
    expect(res.code).toBe(0);
    expect(listRequests(BARE.apikey, from)).toEqual({ companies: 1, appointments: 2, orders: 3, employees: 1, services: 1 });
    expect(await rowCount('orders', 'bare')).toBe(200);
    expect(await rowCount('employees', 'bare')).toBe(0);
  });

  it('syncs only the streams a source lists, and refuses one the Subset API does not serve', async () => {
    const from = sim.stats().requests.length;
    const res = await cli({ sources: [rest('subset', 'glow-two', SUBSET, { streams: ['companies', 'services'] })] }, ['sync']);
    expect(res.code).toBe(0);
    expect(listRequests(SUBSET.apikey, from)).toEqual({ companies: 1, services: 1 });
    const bad = await cli({ sources: [rest('subset', 'glow-three', SUBSET, { streams: ['companies', 'customers'] })] }, ['sync']);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(
      /sources\[0\]\.streams\[1\]: "customers" is not a resource of the subset API \(known: companies, appointments, orders, services, employees\)/,
    );
  });

  it('names the credentials to check for a key on the wrong path, and the Subset particulars only for a Subset source', async () => {
    // A 401 on a Core path says which credentials to check; nothing in it tells a Subset key from a wrong password.
    const onCore = await cli({ sources: [rest('core', 'mixed-up', SUBSET)] }, ['sync']);
    expect(onCore.code).toBe(4);
    expect(onCore.stdout).toMatch(
      /mixed-up: stopped: .*was refused \(401 Unauthorized\)\. Check the gateway key and the API user of source "mixed-up" \(apikey, username and password in sources\[0\] of \S+\); the user must be active\.$/m,
    );
    expect(onCore.stdout).not.toMatch(/Subset/);
    const onSubset = await cli(
      { sources: [{ ...rest('core', 'core-on-subset', CORE), kind: 'subset', baseUrl: sim.subsetBaseUrl(SUBSET.subsetName) }] },
      ['status', '--check'],
    );
    expect(onSubset.code).toBe(4);
    expect(onSubset.stdout).toMatch(/connectivity FAILED: .*401 Unauthorized.*a Core key is refused there/);
    const subsetUrlAsCore = await cli({ sources: [{ ...rest('subset', 'wrong-kind', SUBSET), kind: 'core' }] }, ['sync']);
    expect(subsetUrlAsCore.code).toBe(3);
    expect(subsetUrlAsCore.stderr).toContain('this baseUrl is a Subset API path (/CustomAPI/...): set kind to "subset"');
  });

  it('refuses to register webhooks for a Subset source, before any request', async () => {
    const from = sim.stats().requests.length;
    const res = await cli(config(), ['webhooks', 'register', '--source', 'glow', '--url', 'https://sync.example.com', '--yes']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('source "glow" is a subset source: the Subset API sends no webhooks');
    expect(sim.stats().requests.length).toBe(from);
  });
});

describe('one config file with a Core, a Subset and a Pro source', () => {
  const config = () => ({
    sources: [
      rest('core', 'main', CORE),
      rest('subset', 'branch', SUBSET),
      { kind: 'pro', name: 'practice', baseUrl: sim.proBaseUrl(), practiceId: PRO.practiceId, token: PRO.token },
    ],
  });

  it('sync and status work for every kind', async () => {
    const res = await cli(config(), ['sync']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(await rowCount('customers', 'main')).toBe(30);
    expect(await rowCount('orders', 'branch')).toBe(sim.tenant(SUBSET.apikey).count('orders'));
    expect(await rowCount('pro_patients', 'practice')).toBe(12);
    expect(await rowCount('pro_appointments', 'practice')).toBe(12);

    const status = await cli(config(), ['status', '--json', '--check']);
    expect(status.code).toBe(0);
    const statuses = JSON.parse(status.stdout) as Array<{
      source: string;
      kind: string;
      connectivity: { ok: boolean; checked: string };
      resources: Array<{ resource: string; rows: number }>;
    }>;
    expect(statuses.map((s) => [s.source, s.kind, s.connectivity])).toEqual([
      ['main', 'core', { ok: true, checked: 'GET /status' }],
      ['branch', 'subset', { ok: true, checked: 'GET /companies' }],
      ['practice', 'pro', { ok: true, checked: 'GET /practices/610/event-types' }],
    ]);
    expect(statuses[1]!.resources.map((r) => r.resource).sort()).toEqual([...SUBSET_RESOURCES].sort());
    expect(statuses[2]!.resources.find((r) => r.resource === 'patients')!.rows).toBe(12);
  });

  it('never shows a secret in output or stores one in the database', async () => {
    for (const out of outputs) for (const secret of SECRETS) expect(out.stdout + out.stderr).not.toContain(secret);
    const dump = await db.pool.query<{ t: string }>(
      `SELECT string_agg(t, ' ') AS t FROM (
         SELECT row_to_json(r)::text AS t FROM pmsync.runs r UNION ALL SELECT row_to_json(s)::text FROM pmsync.sync_state s
         UNION ALL SELECT row_to_json(q)::text FROM pmsync.quarantine q UNION ALL SELECT row_to_json(u)::text FROM pmsync.quota_usage u
       ) x`,
    );
    for (const secret of SECRETS) expect(dump.rows[0]!.t).not.toContain(secret);
  });
});
