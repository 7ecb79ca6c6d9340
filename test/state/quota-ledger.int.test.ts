/**
 * The quota ledger in PostgreSQL: one conditional upsert counts and decides,
 * so concurrent takers on separate connections never pass the limit.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { QuotaExhaustedError } from '../../src/errors.ts';
import { QuotaLedger, type QuotaSettings } from '../../src/state/quota.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { TestClock } from '../support/harness.ts';

let db: TestDatabase;
let second: Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  second = createPool(db.url, 10);
});
afterAll(async () => {
  await second?.end();
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('DELETE FROM pmsync.quota_usage');
});

const settings = (over: Partial<QuotaSettings> = {}): QuotaSettings => ({
  keyId: 'k_test',
  dailyLimit: 100,
  reservePercent: 10,
  timeZone: 'UTC',
  resetHour: 0,
  label: 'source "clinic"',
  ...over,
});

async function drain(ledger: QuotaLedger, purpose: 'sync' | 'priority' = 'sync'): Promise<number> {
  let ok = 0;
  for (;;) {
    try {
      await ledger.take(purpose);
      ok++;
    } catch (err) {
      if (err instanceof QuotaExhaustedError) return ok;
      throw err;
    }
  }
}

describe('quota ledger', () => {
  it('lets 40 concurrent takers on two connection pools through exactly the allowance, no more', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const a = new QuotaLedger(db.pool, settings({ dailyLimit: 500 }), clock.now);
    const b = new QuotaLedger(second, settings({ dailyLimit: 500 }), clock.now);
    const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => drain(i % 2 ? a : b)));
    expect(counts.reduce((x, y) => x + y, 0)).toBe(450);
    expect((await a.snapshot()).used).toBe(450);
  });

  it('keeps the reserve for priority requests', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const ledger = new QuotaLedger(db.pool, settings(), clock.now);
    expect(await drain(ledger, 'sync')).toBe(90);
    const err = (await ledger.take('sync').catch((e: unknown) => e)) as QuotaExhaustedError;
    expect(err.message).toMatch(
      /used up for 2026-03-02: 90 of 90 requests \(10% is kept for webhook refreshes and resyncs\).*resume after 2026-03-03T00:00:00.000Z/,
    );
    expect(await drain(ledger, 'priority')).toBe(10);
    expect((await ledger.snapshot()).used).toBe(100);
  });

  it('starts a new quota day at the configured hour in the configured time zone', async () => {
    const clock = new TestClock('2026-07-01T08:59:00Z'); // 04:59 in New York (EDT)
    const ledger = new QuotaLedger(db.pool, settings({ timeZone: 'America/New_York', resetHour: 5 }), clock.now);
    expect(await drain(ledger)).toBe(90);
    const snap = await ledger.snapshot();
    expect(snap.day).toBe('2026-06-30');
    expect(snap.resetsAt.toISOString()).toBe('2026-07-01T09:00:00.000Z');
    clock.set('2026-07-01T09:00:00Z');
    expect((await ledger.snapshot()).day).toBe('2026-07-01');
    await ledger.take('sync');
    expect((await ledger.snapshot()).used).toBe(1);
  });

  it('after a 429 refuses every request until the reset, then starts afresh', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const ledger = new QuotaLedger(db.pool, settings(), clock.now);
    await ledger.take('sync');
    const err = (await ledger.exhausted()) as QuotaExhaustedError;
    expect(err.resumeAt.toISOString()).toBe('2026-03-03T00:00:00.000Z');
    await expect(ledger.take('priority')).rejects.toBeInstanceOf(QuotaExhaustedError);
    clock.set('2026-03-02T23:59:59Z');
    await expect(ledger.take('sync')).rejects.toBeInstanceOf(QuotaExhaustedError);
    clock.set('2026-03-03T00:00:00Z');
    await ledger.take('sync');
    expect(await ledger.snapshot()).toMatchObject({ day: '2026-03-03', used: 1, exhaustedUntil: null });
  });
});
