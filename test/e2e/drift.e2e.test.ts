/**
 * Records changed between page requests (the simulator's mutateBetweenPages):
 * each served page has some of its records updated, which moves them out of
 * the window and slides every later row one position down. Twenty seeded
 * trials, on first passes and on incremental windows: nothing is lost, the
 * cost is one request per page plus one, and the next run brings every
 * changed record up to date.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { syncSource } from '../../src/sync/sync-source.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, loadTestConfig, openTestApp, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'drift-key-K2', username: 'drift.user', password: 'drift-pass-M4', variant: 'core' as const };

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

function rng(seed: number): () => number {
  let s = (seed * 2_654_435_761) >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

async function storedIds(source: string): Promise<Set<string>> {
  const res = await db.pool.query<{ id: string }>('SELECT id FROM customers WHERE source = $1', [source]);
  return new Set(res.rows.map((r) => r.id));
}

describe('records changed while a window is paged', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const incremental = seed % 2 === 0;
    it(`trial ${seed} (${incremental ? 'incremental window' : 'first pass'}): nothing lost, one extra request`, async () => {
      const random = rng(seed);
      const size = 1_500 + Math.floor(random() * 2_500);
      const perPage = 1 + Math.floor(random() * 5);
      const clock = new TestClock('2026-03-02T10:00:00Z');
      const sim: Simulator = await startSimulator({
        seed,
        now: clock.now,
        tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: size } }],
      });
      const name = `drift${seed}`;
      const config = loadTestConfig(db.url, [coreEntry(sim, name, TENANT, { dailyQuota: 1_000_000, streams: ['customers'] })]);
      const source = config.sources[0] as CoreSourceConfig;
      const app = await openTestApp(config, { now: clock.now });
      const tenant = sim.tenant(TENANT.apikey);
      try {
        let windowRows = size;
        if (incremental) {
          await syncSource(app.ctx, source);
          clock.advance(60_000);
          windowRows = tenant.touch('customers', Math.floor(size / 2)).length;
          clock.advance(5 * 60_000);
        }
        sim.setFaults({ mutateBetweenPages: { resource: 'customers', count: perPage } });
        const from = sim.stats().requests.length;
        const result = await syncSource(app.ctx, source);
        expect(result.fatal).toBeUndefined();
        expect(result.failures).toEqual([]);

        const ids = await storedIds(name);
        const missing = tenant.list('customers').filter((r) => !ids.has(String(r.CustomerId)));
        expect(missing).toEqual([]);
        const pages = sim
          .stats()
          .requests.slice(from)
          .filter((r) => r.path.endsWith('/customers'));
        expect(pages).toHaveLength(Math.ceil(windowRows / 100) + 1);
        expect(app.logs.some((l) => l.includes('rows entered or left the window while it was paged'))).toBe(true);

        // The changed records left the window with a newer ModifiedOn: the next window reads them.
        sim.setFaults({});
        clock.advance(5 * 60_000);
        await syncSource(app.ctx, source);
        const rows = await db.pool.query<{ id: string; raw: Record<string, unknown> }>('SELECT id, raw FROM customers WHERE source = $1', [
          name,
        ]);
        const stored = new Map(rows.rows.map((r) => [r.id, r.raw]));
        const served = tenant.list('customers');
        expect(stored.size).toBe(served.length);
        for (const record of served) expect(stored.get(String(record.CustomerId))).toEqual(record);
      } finally {
        await app.close();
        await sim.close();
      }
    });
  }
});
