/**
 * What a read right after a full read costs: only the overlap before the
 * cursor (and what changed since) is read again; a cursor in the future reads
 * nothing at all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { syncSource } from '../../src/sync/sync-source.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, loadTestConfig, openTestApp, TestClock, type TestApp } from '../support/harness.ts';

const TENANT = { apikey: 'overlap-key-H3', username: 'overlap.user', password: 'overlap-pass-J8', variant: 'core' as const };
const clock = new TestClock('2026-03-02T09:55:00Z');
let sim: Simulator;
let db: TestDatabase;
let app: TestApp;
let source: CoreSourceConfig;

beforeAll(async () => {
  sim = await startSimulator({ seed: 4, now: clock.now, tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 3_000 } }] });
  db = await createTestDatabase();
  const config = loadTestConfig(db.url, [
    coreEntry(sim, 'clinic', TENANT, { streams: ['customers'], overlapSeconds: 600, lagSeconds: 60 }),
  ]);
  source = config.sources[0] as CoreSourceConfig;
  app = await openTestApp(config, { now: clock.now });
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

function customerRequests(from: number) {
  return sim
    .stats()
    .requests.slice(from)
    .filter((r) => r.path.endsWith('/customers'));
}

describe('incremental reads after a full read', () => {
  it('a second read re-reads only the overlap before the cursor, plus what changed since', async () => {
    const tenant = sim.tenant(TENANT.apikey);
    const early = tenant.touch('customers', 50).map((r) => r.CustomerId); // modified at 09:55, five minutes before the first read
    clock.set('2026-03-02T10:00:00Z');
    const first = await syncSource(app.ctx, source);
    expect(first.runs[0]).toMatchObject({ status: 'succeeded', pages: 30, requests: 30, inserted: 3_000 });

    clock.set('2026-03-02T10:00:30Z');
    const late = tenant.touch('customers', 20).map((r) => r.CustomerId);
    clock.set('2026-03-02T10:02:00Z');
    const from = sim.stats().requests.length;
    const second = await syncSource(app.ctx, source);
    // Window [09:59:00 - 10 min, 10:01:00]: the 50 rows of 09:55 again (unchanged) and the 20 changed at 10:00:30.
    const unchanged = early.filter((id) => !late.includes(id)).length;
    expect(second.runs[0]).toMatchObject({ status: 'succeeded', pages: 1, requests: 1, inserted: 0, updated: 20, unchanged });
    expect(customerRequests(from)).toHaveLength(1);
  });

  it('a cursor set in the future reads nothing and sends no request', async () => {
    await db.pool.query(`UPDATE pmsync.sync_state SET cursor = '2026-03-03T00:00:00Z' WHERE source = 'clinic' AND resource = 'customers'`);
    clock.set('2026-03-02T10:10:00Z');
    const from = sim.stats().requests.length;
    const result = await syncSource(app.ctx, source);
    expect(result.runs[0]).toMatchObject({ status: 'skipped', requests: 0, pages: 0 });
    expect(sim.stats().requests.length).toBe(from);
  });
});
