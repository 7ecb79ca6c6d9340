/**
 * Two `pmsync sync` processes on one database and one gateway key, started
 * together: the ledger's conditional upsert decides every request, so
 * together they send no more than the configured quota. They also share the
 * key's limiter through the test run's Redis (REDIS_URL), when the run has
 * one (test/support/redis.ts); the quota holds either way.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, spawnCli, waitExit, writeConfig } from '../support/cli.ts';
import { coreEntry, requestsPerDay, TestClock } from '../support/harness.ts';

// The limiter's id in Redis comes from the key: a key of its own keeps runs sharing one Redis apart.
const TENANT = {
  apikey: `pair-key-${randomBytes(4).toString('hex')}`,
  username: 'pair.user',
  password: 'pair-pass-B7',
  variant: 'core' as const,
};
const QUOTA = 120;
const NOW = '2026-03-02T10:00:00.000Z';

let sim: Simulator;
let db: TestDatabase;
let config: string;
const redisUrl = inject('redisUrl');

beforeAll(async () => {
  sim = await startSimulator({
    seed: 8,
    now: new TestClock(NOW).now,
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 30_000, orders: 6_000, appointments: 4_000 } }],
  });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [
      coreEntry(sim, 'clinic', TENANT, {
        dailyQuota: QUOTA,
        budget: 0,
        quota: { reservePercent: 0 },
        streams: ['customers', 'orders', 'appointments'],
      }),
    ],
  });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('two processes, one key', () => {
  it('together stay within the configured quota, every request counted once', async () => {
    const env = cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW, ...(redisUrl ? { REDIS_URL: redisUrl } : {}) });
    const children = [spawnCli(['--config', config, 'sync'], env), spawnCli(['--config', config, 'sync'], env)];
    const results = await Promise.all(children.map(waitExit));
    // Spending the allowance while the backfills moved is planned, not a failure: both exit 0.
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    expect(results.map((r) => r.stdout).join('')).toMatch(
      /Daily allowance for source "clinic" is used up for 2026-03-02: 120 of 120 requests/,
    );

    const seen = requestsPerDay(sim, TENANT.apikey).get('2026-03-02') ?? 0;
    const ledger = await db.pool.query<{ used: number }>(`SELECT used FROM pmsync.quota_usage WHERE quota_day = '2026-03-02'`);
    expect(ledger.rows[0]!.used).toBe(QUOTA);
    expect(seen).toBe(QUOTA);
    // Both processes did send requests: the quota was shared, not used by one alone.
    const runs = await db.pool.query<{ n: number }>(
      `SELECT count(DISTINCT resource)::int AS n FROM pmsync.runs WHERE source = 'clinic' AND requests > 0`,
    );
    expect(runs.rows[0]!.n).toBeGreaterThanOrEqual(2);
  });
});
