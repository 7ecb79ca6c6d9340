/**
 * The nightly cron container on a small quota: `pmsync sync` (every resource,
 * as the container runs it) once a quota day against a 40-request quota, with
 * 5% of responses failing and records moving between pages while a backfill
 * reads them. It must finish the first pass in the days the minimum request
 * count implies (plus at most one), exit 0 on every healthy day, never draw a
 * 429, lose no row, and, once caught up, check every stream within the bound
 * it states. Requests are the simulator's own count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { CORE_RESOURCES, type CoreResource } from '../../simulator/types.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, DAY, TestClock } from '../support/harness.ts';
import { scaled } from '../support/time-scale.ts';

const TENANT = { apikey: 'cron-key-Q4', username: 'cron.user', password: 'cron-pass-Z8', variant: 'core' as const };
/** A second account, read by a source of its own from a second config file. */
const LATE = { apikey: 'cron-key-late-R2', username: 'late.user', password: 'late-pass-T3', variant: 'core' as const };
const QUOTA = 40;
/** The defaults: 10% kept for resyncs, 15% of the quota the scheduled-spend budget. */
const ALLOWANCE = 36;
const BUDGET = 6;
const SIZES: Record<CoreResource, number> = {
  companies: 2,
  customers: 2_500,
  appointments: 2_500,
  orders: 300,
  memberships: 150,
  membershipprograms: 5,
  giftcertificates: 40,
  products: 30,
  services: 20,
  employees: 10,
};
const TABLES: Record<CoreResource, { table: string; id: string }> = {
  companies: { table: 'companies', id: 'CompanyId' },
  customers: { table: 'customers', id: 'CustomerId' },
  appointments: { table: 'appointments', id: 'AppointmentId' },
  orders: { table: 'orders', id: 'OrderId' },
  memberships: { table: 'memberships', id: 'MembershipId' },
  membershipprograms: { table: 'membership_programs', id: 'MembershipProgramId' },
  giftcertificates: { table: 'gift_certificates', id: 'GiftCertificateId' },
  products: { table: 'products', id: 'ProductId' },
  services: { table: 'services', id: 'ServiceId' },
  employees: { table: 'employees', id: 'EmployeeId' },
};
/** A first pass reads each list at 100 rows a page: this many requests at the least. */
const MIN_REQUESTS = CORE_RESOURCES.reduce((sum, r) => sum + Math.max(1, Math.ceil(SIZES[r] / 100)), 0);
/** What backfills may spend a day: the allowance less the budget held for checks. */
const IMPLIED_DAYS = Math.ceil(MIN_REQUESTS / (ALLOWANCE - BUDGET));

/** Hang guards: a CLI run takes seconds, many days of them minutes on a busy machine. */
const DAYS_TIMEOUT = scaled(300_000);

/** The cron fires at 02:00 UTC; the quota day turns at midnight UTC. */
const clock = new TestClock('2026-04-06T02:00:00Z');
let sim: Simulator;
let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 21,
    now: clock.now,
    tenants: [
      { ...TENANT, dailyQuota: QUOTA, sizes: SIZES },
      { ...LATE, dailyQuota: QUOTA, sizes: { customers: 250 } },
    ],
  });
  db = await createTestDatabase({ migrate: false });
  configFile = writeConfig({
    sources: [
      coreEntry(sim, 'clinic', TENANT, {
        dailyQuota: QUOTA,
        retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 50, maxElapsedMs: 30_000 },
      }),
    ],
  });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

function cron(...args: string[]): Promise<CliResult> {
  return runCli(
    ['sync', '--config', configFile, ...args],
    cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), LOG_LEVEL: 'warn' }),
  );
}

/** The simulator's log for the tenant on the clock's UTC day. */
function requestsToday(): Array<{ path: string; status: number }> {
  const day = clock.iso().slice(0, 10);
  return sim
    .stats()
    .requests.filter((r) => r.apikey === TENANT.apikey && r.at.toISOString().slice(0, 10) === day)
    .map((r) => ({ path: r.path, status: r.status }));
}

/** Resources whose table is missing at least one record the simulator serves. */
async function incomplete(): Promise<CoreResource[]> {
  const tenant = sim.tenant(TENANT.apikey);
  const out: CoreResource[] = [];
  for (const resource of CORE_RESOURCES) {
    const { table, id } = TABLES[resource];
    const exists = await db.pool.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`public.${table}`]);
    const stored = exists.rows[0]?.t
      ? new Set((await db.pool.query<{ id: string }>(`SELECT id FROM ${table} WHERE source = 'clinic'`)).rows.map((r) => r.id))
      : new Set<string>();
    if (tenant.list(resource).some((r) => !stored.has(String(r[id])))) out.push(resource);
  }
  return out;
}

const checkedOn: Array<Set<string>> = [];
/** What checking every stream costs, as the start-up warning names it, and the bound it implies. */
let needed = 0;
let bound_ = 0;

describe('the cron container on a 40-request quota', () => {
  it(
    `finishes every first pass within ${IMPLIED_DAYS + 1} quota days, exiting 0 each day, with no 429`,
    async () => {
      sim.setFaults({ errorRate: 0.05, mutateBetweenPages: { resource: 'customers', count: 2 } });
      let days = 0;
      let left = [...CORE_RESOURCES] as CoreResource[];
      while (left.length > 0 && days < IMPLIED_DAYS + 1) {
        days++;
        const result = await cron();
        expect(result.code, `day ${days}: ${result.stdout}\n${result.stderr}`).toBe(0);
        const today = requestsToday();
        expect(today.length, `day ${days}`).toBeLessThanOrEqual(QUOTA);
        expect(today.filter((r) => r.status === 429)).toEqual([]);
        left = await incomplete();
        clock.advance(DAY);
      }
      expect(left, `after ${days} days (minimum ${MIN_REQUESTS} requests imply ${IMPLIED_DAYS})`).toEqual([]);
    },
    DAYS_TIMEOUT,
  );

  it(
    'warns at start that the budget cannot check every stream each day, naming the budget that would',
    async () => {
      sim.setFaults({});
      const result = await cron();
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stderr).toMatch(/budget of \\"clinic\\" \(6 requests a quota day\) cannot check each of its 10 streams once a day/);
      const named = /A budget of (\d+) or more would check every stream daily/.exec(result.stderr);
      // Each of the 10 streams costs at least one request a check, so no smaller budget could.
      expect(Number(named?.[1])).toBeGreaterThanOrEqual(CORE_RESOURCES.length);
      needed = Number(named?.[1]);
      checkedOn.push(checkedToday());
      clock.advance(DAY);
    },
    DAYS_TIMEOUT,
  );

  it(
    'once caught up, checks every stream within its stated bound, stalest first, exiting 0 every day',
    async () => {
      const tenant = sim.tenant(TENANT.apikey);
      for (let day = 0; day < 5; day++) {
        tenant.touch('customers', 3);
        tenant.touch('appointments', 4);
        tenant.touch('orders', 2);
        const result = await cron();
        expect(result.code, result.stdout + result.stderr).toBe(0);
        const today = requestsToday();
        expect(today.length).toBeLessThanOrEqual(QUOTA);
        expect(today.filter((r) => r.status === 429)).toEqual([]);
        checkedOn.push(checkedToday());
        clock.advance(DAY);
      }
      const status = await runCli(
        ['status', '--config', configFile, '--source', 'clinic'],
        cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() }),
      );
      const bound = Math.ceil(needed / BUDGET);
      expect(bound).toBeGreaterThan(1);
      expect(status.stdout).toContain(`every stream is checked at least every ${bound} quota days`);
      for (let start = 0; start + bound <= checkedOn.length; start++) {
        const seen = new Set(checkedOn.slice(start, start + bound).flatMap((s) => [...s]));
        expect(
          CORE_RESOURCES.filter((r) => !seen.has(r)),
          `days ${start}..${start + bound - 1}`,
        ).toEqual([]);
      }
      expect(await incomplete()).toEqual([]);
      bound_ = bound;
    },
    DAYS_TIMEOUT,
  );

  it(
    'exits 5 naming the stream once the quota, spent elsewhere, leaves a stream unchecked past its bound',
    async () => {
      // Every request now meets a 429, as when other integrations spend the shared quota first.
      sim.setFaults({ apikey: TENANT.apikey, quotaExhaustAfter: 0 });
      const lastChecked = Math.min(...CORE_RESOURCES.map((r) => checkedOn.findLastIndex((day) => day.has(r))));
      const firstStall = lastChecked + bound_ + 1;
      for (let day = checkedOn.length; day <= firstStall; day++) {
        const result = await cron();
        expect(requestsToday(), `day ${day}: pmsync stops at the first 429`).toHaveLength(1);
        if (day < firstStall) {
          expect(result.code, `day ${day}: ${result.stdout}`).toBe(0);
        } else {
          expect(result.code, result.stdout + result.stderr).toBe(5);
          expect(result.stdout).toMatch(
            new RegExp(`clinic/\\w+: stalled: last checked ${bound_ + 1} quota days ago .*past its bound of ${bound_}`),
          );
        }
        checkedOn.push(checkedToday());
        clock.advance(DAY);
      }
      sim.setFaults({ apikey: TENANT.apikey });
    },
    DAYS_TIMEOUT,
  );

  it(
    'exits 5 naming a backfill that made no progress for a whole quota day, and 0 while it moves',
    async () => {
      const late = LATE;
      const file = writeConfig({ sources: [coreEntry(sim, 'late', late, { dailyQuota: QUOTA, streams: ['customers'] })] });
      const run = () =>
        runCli(
          ['sync', '--config', file],
          cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), LOG_LEVEL: 'warn' }),
        );

      // One page gets through before the 429: the backfill moved today.
      sim.setFaults({ apikey: late.apikey, quotaExhaustAfter: 1 });
      const moved = await run();
      expect(moved.code, moved.stdout + moved.stderr).toBe(0);
      clock.advance(DAY);

      // Nothing gets through all the next quota day.
      sim.setFaults({ apikey: late.apikey, quotaExhaustAfter: 0 });
      const stalled = await run();
      expect(stalled.code, stalled.stdout + stalled.stderr).toBe(5);
      expect(stalled.stdout).toMatch(/late\/customers: stalled: no progress since .* while work remains \(its first pass\)/);
      const rows = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM customers WHERE source = 'late'`);
      expect(rows.rows[0]!.n).toBe(100);
      sim.setFaults({ apikey: late.apikey });
    },
    DAYS_TIMEOUT,
  );
});

/** The list paths the simulator served the tenant today, as resource names. */
function checkedToday(): Set<string> {
  const out = new Set<string>();
  for (const r of requestsToday()) {
    const name = r.path.replace(/^.*\/api\/v1\//, '').toLowerCase();
    if ((CORE_RESOURCES as readonly string[]).includes(name) && r.status === 200) out.add(name);
  }
  return out;
}
