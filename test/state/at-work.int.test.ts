/**
 * When a practice's checks first found it at work today, read against
 * PostgreSQL: the earliest first change since its local midnight of a window
 * that found a few changes, which says when a new practice without webhooks
 * began its day (src/scheduler/observe.ts, atWorkSince).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPage, atWorkSinceOf, finishRun, setFirstChange, startRun, type RunStatus } from '../../src/state/runs.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const DAY_START = new Date('2026-11-19T05:00:00Z');
const at = (hours: number) => new Date(DAY_START.getTime() + hours * 3_600_000);

/** A check of [from, to) that found `changes` rows changed, the first of them at `first`. */
async function check(
  source: string,
  resource: string,
  from: number,
  to: number,
  changes: number,
  first: number | null,
  status: RunStatus = 'succeeded',
): Promise<void> {
  const id = await startRun(db.pool, { source, resource, mode: 'incremental', purpose: 'check', windowStart: at(from), windowEnd: at(to) });
  await addPage(db.pool, id, { inserted: 0, updated: changes, unchanged: 0, rejected: 0 }, 1);
  if (first !== null) await setFirstChange(db.pool, id, at(first));
  await finishRun(db.pool, id, status);
}

describe('the instant checks first found the practice at work', () => {
  it('is the earliest first change since local midnight of a window with a few changes, stream by stream', async () => {
    // Yesterday's evening, a lone booking in the night, then the practice's morning from 08:10.
    await check('a', 'appointments', -6, -4, 12, -5.5);
    await check('a', 'appointments', 1, 3, 1, 2);
    await check('a', 'appointments', 3, 9, 14, 8.2);
    await check('a', 'appointments', 9, 9.5, 6, 9.1);
    // A window that began yesterday and found today's first changes counts from them.
    await check('a', 'customers', -2, 8.5, 3, 8.4);
    // A failed check, and one that found one change only, say nothing.
    await check('a', 'orders', 7, 8.3, 5, 8.1, 'failed');
    await check('a', 'orders', 8.3, 9, 1, 8.9);
    // A check whose rows carried no modification time.
    await check('a', 'memberships', 7, 9, 4, null);

    const read = await atWorkSinceOf(db.pool, [{ source: 'a', since: DAY_START }], 2);
    // Each with the changes its checks found in windows ending since midnight (the failed check's aside).
    expect(Object.fromEntries(read.get('a')!)).toEqual({
      appointments: { day: DAY_START, since: at(8.2), found: 21 },
      customers: { day: DAY_START, since: at(8.4), found: 3 },
      orders: { day: DAY_START, since: null, found: 1 },
      memberships: { day: DAY_START, since: null, found: 4 },
    });
  });

  it('reads each source from its own midnight, and only the streams asked for', async () => {
    await check('b', 'appointments', 6, 7, 3, 6.5);
    await check('b', 'customers', 6, 7, 3, 6.7);
    await check('c', 'appointments', 5, 6.9, 3, 6.5);
    // Source c's day began at 07:00 (another zone): its check that ended at 06:54 was yesterday's.
    const read = await atWorkSinceOf(
      db.pool,
      [
        { source: 'b', since: DAY_START },
        { source: 'c', since: at(7) },
      ],
      2,
      [{ source: 'b', resource: 'customers' }],
    );
    expect(Object.fromEntries(read.get('b')!)).toEqual({ customers: { day: DAY_START, since: at(6.7), found: 3 } });
    expect(read.get('c')!.size).toBe(0);
    expect((await atWorkSinceOf(db.pool, [{ source: 'c', since: at(7) }], 2)).get('c')!.size).toBe(0);
    expect(Object.fromEntries((await atWorkSinceOf(db.pool, [{ source: 'c', since: DAY_START }], 2)).get('c')!)).toEqual({
      appointments: { day: DAY_START, since: at(6.5), found: 3 },
    });
  });
});
