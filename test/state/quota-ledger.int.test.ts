/**
 * The quota ledger in PostgreSQL: one conditional upsert counts and decides,
 * so concurrent takers on separate connections never pass the limit, and each
 * purpose spends only its share: the budget for checks, webhook-triggered
 * fetches and full refreshes; the allowance less the unspent budget for
 * backfills; the whole quota for resyncs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { QuotaExhaustedError } from '../../src/errors.ts';
import { QuotaLedger, type Purpose, type QuotaSettings } from '../../src/state/quota.ts';
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
  budget: 15,
  timeZone: 'UTC',
  resetHour: 0,
  label: 'source "clinic"',
  ...over,
});

async function drain(ledger: QuotaLedger, purpose: Purpose = 'backfill'): Promise<number> {
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
    const a = new QuotaLedger(db.pool, settings({ dailyLimit: 500, budget: 0 }), clock.now);
    const b = new QuotaLedger(second, settings({ dailyLimit: 500, budget: 0 }), clock.now);
    const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => drain(i % 2 ? a : b)));
    expect(counts.reduce((x, y) => x + y, 0)).toBe(450);
    expect((await a.snapshot()).used).toBe(450);
  });

  it('never lets checks, webhook-triggered fetches and full refreshes together past the budget, across pools', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const a = new QuotaLedger(db.pool, settings({ dailyLimit: 1000, budget: 150 }), clock.now);
    const b = new QuotaLedger(second, settings({ dailyLimit: 1000, budget: 150 }), clock.now);
    const purposes: Purpose[] = ['check', 'webhook', 'full'];
    const counts = await Promise.all(Array.from({ length: 30 }, (_, i) => drain(i % 2 ? a : b, purposes[i % 3])));
    expect(counts.reduce((x, y) => x + y, 0)).toBe(150);
    const snap = await a.snapshot();
    expect(snap).toMatchObject({ used: 150, budgetUsed: 150 });
    expect(snap.byPurpose.check + snap.byPurpose.webhook + snap.byPurpose.full).toBe(150);
    const err = (await a.take('check').catch((e: unknown) => e)) as QuotaExhaustedError;
    expect(err.scope).toBe('budget');
    expect(err.message).toMatch(
      /scheduled-spend budget of source "clinic" is used up for 2026-03-02: 150 of 150 requests \(checks \d+, webhook-triggered \d+, full refreshes \d+\)\. Backfills and resyncs go on/,
    );
    expect(err.resumeAt.toISOString()).toBe('2026-03-03T00:00:00.000Z');
  });

  it('holds the unspent budget back from backfills, and keeps the reserve for resyncs', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const ledger = new QuotaLedger(db.pool, settings(), clock.now);
    // allowance 90 of 100, budget 15: a backfill alone may take 75.
    expect(await drain(ledger, 'backfill')).toBe(75);
    const err = (await ledger.take('backfill').catch((e: unknown) => e)) as QuotaExhaustedError;
    expect(err.scope).toBe('allowance');
    expect(err.message).toMatch(
      /allowance for source "clinic" is used up for 2026-03-02: 75 of 90 requests \(10% of the quota is kept for resyncs\), with 15 more held for the day's scheduled checks.*resume after 2026-03-03T00:00:00.000Z/,
    );
    expect(await drain(ledger, 'check')).toBe(15);
    expect(await drain(ledger, 'resync')).toBe(10);
    expect((await ledger.snapshot()).byPurpose).toEqual({ check: 15, backfill: 75, webhook: 0, resync: 10, full: 0 });
  });

  it('lets a backfill use what checks did not need once they have spent, and the budget stop at the allowance', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const ledger = new QuotaLedger(db.pool, settings(), clock.now);
    expect(await drain(ledger, 'webhook')).toBe(15);
    expect(await drain(ledger, 'backfill')).toBe(75);
    expect((await ledger.snapshot()).used).toBe(90);
  });

  it('starts a new quota day at the configured hour in the configured time zone', async () => {
    const clock = new TestClock('2026-07-01T08:59:00Z'); // 04:59 in New York (EDT)
    const ledger = new QuotaLedger(db.pool, settings({ timeZone: 'America/New_York', resetHour: 5 }), clock.now);
    expect(await drain(ledger)).toBe(75);
    const snap = await ledger.snapshot();
    expect(snap.day).toBe('2026-06-30');
    expect(snap.resetsAt.toISOString()).toBe('2026-07-01T09:00:00.000Z');
    clock.set('2026-07-01T09:00:00Z');
    expect((await ledger.snapshot()).day).toBe('2026-07-01');
    await ledger.take('check');
    expect((await ledger.snapshot()).used).toBe(1);
  });

  it('after a 429 refuses every request until the reset, then starts afresh', async () => {
    const clock = new TestClock('2026-03-02T10:00:00Z');
    const ledger = new QuotaLedger(db.pool, settings(), clock.now);
    await ledger.take('check');
    const err = (await ledger.exhausted()) as QuotaExhaustedError;
    expect(err.resumeAt.toISOString()).toBe('2026-03-03T00:00:00.000Z');
    expect(err.scope).toBe('server');
    await expect(ledger.take('resync')).rejects.toBeInstanceOf(QuotaExhaustedError);
    clock.set('2026-03-02T23:59:59Z');
    await expect(ledger.take('check')).rejects.toBeInstanceOf(QuotaExhaustedError);
    clock.set('2026-03-03T00:00:00Z');
    await ledger.take('check');
    expect(await ledger.snapshot()).toMatchObject({ day: '2026-03-03', used: 1, exhaustedUntil: null });
  });
});
