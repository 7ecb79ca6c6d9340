/**
 * A backfill larger than a day's quota, under faults: 5% of responses are 5xx
 * or time out, and the API answers 429 in the middle of the first day. The
 * simulator and pmsync share one clock, moved a day at a time. The backfill
 * stops at its checkpoint each day, resumes the next without help, and
 * finishes on the third day with nothing lost, while the simulator never sees
 * more requests in a quota day than the configured quota.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whileReading } from '../../src/queue.ts';
import { collectStatus } from '../../src/status/detail.ts';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { syncSource } from '../../src/sync/sync-source.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, DAY, loadTestConfig, openTestApp, requestsPerDay, TestClock, type TestApp } from '../support/harness.ts';
import { scaled } from '../support/time-scale.ts';

const TENANT = { apikey: 'days-key-P5', username: 'days.user', password: 'days-pass-V6', variant: 'core' as const };
const QUOTA = 300;
/** 10% kept for resyncs, and the budget (15%) held for the day's checks: what a backfill may spend. */
const BACKFILL_ALLOWANCE = 225;
const CUSTOMERS = 40_000;
const FAULTS = { errorRate: 0.03, timeoutRate: 0.02, hangMs: 1_000 };

const clock = new TestClock('2026-03-02T10:00:00Z');
let sim: Simulator;
let db: TestDatabase;
let app: TestApp;
let source: CoreSourceConfig;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 9,
    now: clock.now,
    tenants: [{ ...TENANT, dailyQuota: QUOTA, sizes: { customers: CUSTOMERS, orders: 250 } }],
  });
  db = await createTestDatabase();
  const config = loadTestConfig(
    db.url,
    [
      coreEntry(sim, 'clinic', TENANT, {
        dailyQuota: QUOTA,
        streams: ['customers', 'orders'],
        retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 50, maxElapsedMs: 30_000 },
      }),
    ],
    (s) => {
      s.requestTimeoutMs = 200;
    },
  );
  source = config.sources[0] as CoreSourceConfig;
  app = await openTestApp(config, { now: clock.now });
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

async function ledgerUsed(day: string): Promise<number> {
  const res = await db.pool.query<{ used: number }>('SELECT used FROM pmsync.quota_usage WHERE quota_day = $1::date', [day]);
  return res.rows[0]?.used ?? 0;
}

/**
 * Waits (bounded, scaled) until the simulator has logged as many requests
 * each quota day as the ledger counted: a timed-out request is logged when
 * its socket closes, a moment after the client gave up on it. The assertions
 * after it show any difference that remains.
 */
async function settle(): Promise<void> {
  const deadline = Date.now() + scaled(5_000);
  while (Date.now() < deadline) {
    let behind = false;
    for (const [day, n] of requestsPerDay(sim, TENANT.apikey)) if ((await ledgerUsed(day)) !== n) behind = true;
    if (!behind) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The runs recorded after `from` (a run id), in the order they started, with how each ended. */
async function runsAfter(from: number): Promise<string[]> {
  const res = await db.pool.query<{ resource: string; status: string }>(
    'SELECT resource, status FROM pmsync.runs WHERE id > $1 ORDER BY id',
    [from],
  );
  return res.rows.map((r) => `${r.resource}:${r.status}`);
}

async function lastRunId(): Promise<number> {
  const res = await db.pool.query<{ id: number | null }>('SELECT max(id)::int AS id FROM pmsync.runs');
  return res.rows[0]?.id ?? 0;
}

describe('a backfill across quota days under faults and a 429', () => {
  it('day 1: stops at its checkpoint on a 429, says when it resumes, and sends nothing more that day', async () => {
    sim.setFaults({ ...FAULTS, quotaExhaustAfter: 120 });
    const result = await syncSource(app.ctx, source);
    expect(result.fatal?.message).toMatch(
      /answered 429 .*Stopped with the checkpoint saved; requests resume after 2026-03-03T00:00:00.000Z/,
    );
    expect(await runsAfter(0)).toEqual(['customers:quota_exhausted']);
    expect(app.logs.some((l) => l.includes('request failed; retrying'))).toBe(true);

    await settle();
    const before = sim.stats().requests.length;
    const again = await syncSource(app.ctx, source);
    expect(again.fatal?.message).toMatch(/answered 429 .* earlier on quota day 2026-03-02.*2026-03-03T00:00:00.000Z/);
    expect(sim.stats().requests.length).toBe(before);

    const [status] = await whileReading(app, () => collectStatus(app, { ...app.config }));
    const customers = status!.resources.find((r) => r.resource === 'customers')!;
    expect(customers.inWindow?.estimate).toMatchObject({ totalPages: CUSTOMERS / 100, dailyAllowance: BACKFILL_ALLOWANCE });
    const e = customers.inWindow!.estimate!;
    expect(e.quotaDays).toBe(Math.ceil(e.pagesLeft / BACKFILL_ALLOWANCE));
    expect(status!.quota?.exhaustedUntil).toBe('2026-03-03T00:00:00.000Z');
  });

  it("day 2: resumes by itself, runs the small backfill first, and stops where the day's checks need the rest", async () => {
    clock.advance(DAY);
    sim.setFaults(FAULTS);
    const from = await lastRunId();
    const result = await syncSource(app.ctx, source);
    expect(await runsAfter(from)).toEqual(['orders:succeeded', 'customers:quota_exhausted']);
    expect(result.fatal?.message).toMatch(
      /allowance for source "clinic" is used up for 2026-03-03: 225 of 270 requests \(10% of the quota is kept for resyncs\), with 45 more held for the day's scheduled checks.*resume after 2026-03-04T00:00:00.000Z/,
    );
    expect(await ledgerUsed('2026-03-03')).toBe(BACKFILL_ALLOWANCE);
  });

  it('day 3: the caught-up stream runs first and the backfill finishes with nothing lost', async () => {
    clock.advance(DAY);
    const from = await lastRunId();
    const result = await syncSource(app.ctx, source);
    expect(result.fatal).toBeUndefined();
    expect(result.failures).toEqual([]);
    expect(await runsAfter(from)).toEqual(['orders:succeeded', 'customers:succeeded']);

    const tenant = sim.tenant(TENANT.apikey);
    for (const [table, resource] of [
      ['customers', 'customers'],
      ['orders', 'orders'],
    ] as const) {
      const rows = await db.pool.query<{ id: string }>(`SELECT id FROM ${table} WHERE source = 'clinic'`);
      const ids = new Set(rows.rows.map((r) => r.id));
      const served = tenant.list(resource);
      expect(
        served.filter((r) => !ids.has(String(r[resource === 'customers' ? 'CustomerId' : 'OrderId']))),
        resource,
      ).toEqual([]);
      expect(ids.size).toBe(served.length);
    }
    const st = await db.pool.query(`SELECT resource, cursor, "window" FROM pmsync.sync_state WHERE source = 'clinic' ORDER BY resource`);
    expect(st.rows.map((r) => [r.resource, r.cursor !== null, r.window])).toEqual([
      ['customers', true, null],
      ['orders', true, null],
    ]);
  });

  it('the simulator never saw more requests in a quota day than the quota, and the ledger counted every attempt', async () => {
    await settle();
    const perDay = requestsPerDay(sim, TENANT.apikey);
    expect([...perDay.keys()]).toEqual(['2026-03-02', '2026-03-03', '2026-03-04']);
    for (const [day, n] of perDay) {
      expect(n, day).toBeLessThanOrEqual(QUOTA);
      expect(await ledgerUsed(day), day).toBe(n);
    }
    const stats = sim.stats();
    expect(stats.requests.filter((r) => r.status === 429 && r.fault === undefined)).toEqual([]);
    expect(stats.requests.some((r) => r.fault === 'timeout')).toBe(true);
    expect(stats.requests.some((r) => r.fault === 'error')).toBe(true);
    expect(stats.requests.filter((r) => r.fault === 'quotaExhausted')).toHaveLength(1);
  });
});
