/**
 * Changing column policies through the CLI, against the simulator: a stricter
 * policy is applied to what is stored when a command starts, without a
 * request to the API; a looser one is taken with a warning naming the resync
 * and its cost, which `status` repeats until a full pass has read the records
 * again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { TestClock } from '../support/harness.ts';

const KEY = 'change-e2e-key-Pq8-Wm2-Zx5-Rt7-Lk4-Vb9-Nc3';
const TENANT = {
  apikey: 'policy-e2e-key-Hu6',
  username: 'policy.user',
  password: 'policy-pass-Gy2',
  variant: 'core' as const,
  sizes: {
    customers: 250,
    companies: 1,
    appointments: 5,
    orders: 5,
    memberships: 2,
    membershipprograms: 1,
    giftcertificates: 2,
    products: 2,
    services: 2,
    employees: 2,
  },
};

let sim: Simulator;
let db: TestDatabase;
const clock = new TestClock('2026-07-01T09:00:00.000Z');

function config(privacy?: Record<string, unknown>): string {
  return writeConfig({
    ...(privacy ? { privacy } : {}),
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
        lagSeconds: 0,
        history: ['customers'],
      },
    ],
  });
}

async function cli(file: string, args: string[]): Promise<CliResult> {
  return runCli(
    ['--config', file, ...args],
    cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), PMSYNC_HASH_KEY: KEY, LOG_LEVEL: 'info' }),
  );
}

const requests = () => sim.stats().requests.filter((r) => r.apikey === TENANT.apikey).length;

beforeAll(async () => {
  sim = await startSimulator({ seed: 31, now: clock.now, tenants: [TENANT], practices: [] });
  db = await createTestDatabase();
  const first = await cli(config(), ['sync']);
  expect(first.code, first.stderr).toBe(0);
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('changing column policies', () => {
  it('applies a stricter one to the stored rows and history when a command starts, with no API request', async () => {
    const phones = sim
      .tenant(TENANT.apikey)
      .list('customers')
      .map((c) => String(c.MobilePhone));
    const before = requests();
    const res = await cli(
      config({ key: { env: 'PMSYNC_HASH_KEY' }, columns: { 'customers.email': 'hash', 'customers.mobile_phone': 'drop' } }),
      ['repopulate', '--table', 'customers'],
    );
    expect(res.code, res.stderr).toBe(0);
    expect(requests()).toBe(before);
    expect(res.stderr).toMatch(
      /"rows":250,"versions":250,"quarantined":0.*a stricter privacy policy was applied to what is stored of customers/,
    );
    const stored = await db.pool.query<{ raw: string; phones: number; hashed: number }>(
      `SELECT (SELECT string_agg(raw::text, '') FROM customers_history) AS raw,
              (SELECT count(mobile_phone)::int FROM customers) AS phones,
              (SELECT count(*)::int FROM customers WHERE email ~ '^[0-9a-f]{64}$') AS hashed`,
    );
    expect(stored.rows[0]!.phones).toBe(0);
    expect(stored.rows[0]!.hashed).toBe(250);
    expect(phones.filter((p) => stored.rows[0]!.raw.includes(p))).toEqual([]);
  });

  it('takes a looser one with a warning naming the resync and its cost, which status repeats until a full pass', async () => {
    const looser = config({ key: { env: 'PMSYNC_HASH_KEY' }, columns: { 'customers.email': 'hash' } });
    clock.advance(2_000);
    const res = await cli(looser, ['sync', '--resource', 'customers']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(
      'the privacy policy of customers is looser than the one its stored rows follow (customers.mobile_phone: drop -> keep)',
    );
    expect(res.stderr).toContain(
      'read them again with \\"pmsync resync customers --source clinic --full\\" (about 3 requests for 250 stored rows)',
    );
    const status = await cli(looser, ['status']);
    expect(status.stdout).toMatch(
      /privacy: clinic\/customers holds records stored under a stricter policy since .* \(customers\.mobile_phone: drop -> keep\)/,
    );

    clock.advance(2_000);
    const resync = await cli(looser, ['resync', 'customers', '--source', 'clinic', '--full']);
    expect(resync.code, resync.stderr).toBe(0);
    const phones = await db.pool.query<{ n: number }>(`SELECT count(mobile_phone)::int AS n FROM customers`);
    expect(phones.rows[0]!.n).toBe(250);
    const after = await cli(looser, ['status']);
    expect(after.stdout).toContain('retention:');
    expect(after.stdout).not.toContain('privacy:');
    clock.advance(2_000);
    const next = await cli(looser, ['sync', '--resource', 'customers']);
    expect(next.stderr).toContain('the records of customers were read again since its privacy policy was loosened');
    expect(next.stderr).not.toContain('looser');
    expect([res, status, resync, after, next].map((r) => r.stdout + r.stderr).join('')).not.toContain(KEY);
  });
});
