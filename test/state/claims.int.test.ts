/**
 * Dispatch claims written together, against PostgreSQL: a tick's claims are
 * one statement per batch, and each is won exactly as a claim made alone is
 * (from the `seen` it was decided on, behind its fence), a stream claimed
 * twice in a call wins once, and two processes claiming the same streams at
 * once win each stream once between them, without a deadlock.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { SHARD_LOCK_CLASS } from '../../src/state/locks.ts';
import { CLAIM_BATCH, claimDispatch, claimDispatches, loadStreamSchedules, type Claim } from '../../src/state/stream-schedule.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const T0 = new Date('2026-03-12T10:00:00Z');
const T1 = new Date('2026-03-12T10:15:00Z');
const T2 = new Date('2026-03-12T10:30:00Z');

const claim = (source: string, resource: string, over: Partial<Claim> = {}): Claim => ({
  source,
  resource,
  seen: null,
  at: T0,
  purpose: 'check',
  reason: 'rate',
  holder: 'h:1',
  ...over,
});

describe('claims written together', () => {
  it('wins each claim as a claim made alone would, and a stream claimed twice in one call once', async () => {
    // b/orders already fired at T0 with a notification mark; b/customers fired at T0 too.
    expect(await claimDispatch(db.pool, claim('b', 'orders', { notifiedUntil: T0 }))).toBe(true);
    expect(await claimDispatch(db.pool, claim('b', 'customers'))).toBe(true);

    const won = await claimDispatches(db.pool, [
      claim('a', 'customers', { at: T1 }), // new stream: inserted
      claim('b', 'orders', { seen: T0, at: T1, purpose: 'webhook', reason: 'notified' }), // seen matches: won
      claim('b', 'customers', { seen: null, at: T1 }), // decided on a stale row: lost
      claim('a', 'customers', { at: T2 }), // the same stream again in this call: lost
      claim('b', 'orders', { seen: T0, at: T2 }), // and again, from the same seen: lost
    ]);
    expect(won).toEqual([true, true, false, false, false]);

    const a = await loadStreamSchedules(db.pool, 'a');
    const b = await loadStreamSchedules(db.pool, 'b');
    expect(a.get('customers')?.lastFireAt).toEqual(T1);
    expect(b.get('customers')?.lastFireAt).toEqual(T0);
    expect(b.get('orders')).toMatchObject({ lastFireAt: T1, lastFirePurpose: 'webhook', lastFireReason: 'notified', notifiedUntil: T0 });
    expect(await claimDispatches(db.pool, [])).toEqual([]);
  });

  it('wins a fenced claim only while the claimer holds its fence', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query('SELECT pg_advisory_lock($1, $2)', [SHARD_LOCK_CLASS, 7]);
      const fence = (key: number, by = pid) => ({ fence: { lockClass: SHARD_LOCK_CLASS, key, pid: by } });
      const won = await claimDispatches(db.pool, [
        claim('f1', 'customers', fence(7)), // held: won
        claim('f2', 'customers', fence(8)), // another shard, not held: lost
        claim('f3', 'customers', fence(7, pid + 1_000_000)), // held, but by another backend: lost
        claim('f4', 'customers'), // unfenced: won
      ]);
      expect(won).toEqual([true, false, false, true]);
      expect((await loadStreamSchedules(db.pool, 'f2')).size).toBe(0);

      await holder.query('SELECT pg_advisory_unlock($1, $2)', [SHARD_LOCK_CLASS, 7]);
      expect(await claimDispatches(db.pool, [claim('f1', 'customers', { ...fence(7), seen: T0, at: T1 })])).toEqual([false]);
    } finally {
      await holder.end();
    }
  });

  it('claims more than a statement holds, each in its place', async () => {
    const claims = Array.from({ length: CLAIM_BATCH * 2 + 7 }, (_, i) => claim(`m${String(i).padStart(4, '0')}`, 'orders', { at: T1 }));
    // Every third stream fired already, after its claim below was decided (it saw no fire): those claims are lost.
    const fired = claims.filter((_, i) => i % 3 === 0);
    expect(
      await claimDispatches(
        db.pool,
        fired.map((c) => ({ ...c, at: T0 })),
      ),
    ).toEqual(fired.map(() => true));
    const won = await claimDispatches(db.pool, [...claims].reverse());
    expect(won).toEqual([...claims].reverse().map((c) => !fired.includes(c)));
  });

  it('two processes claiming the same streams at once win each of them once between them, whatever their order', async () => {
    const other: Pool = createPool(db.url, 2);
    try {
      const streams = Array.from({ length: 300 }, (_, i) => [`c${i % 30}`, `r${Math.floor(i / 30)}`] as const);
      let seen: Date | null = null;
      for (let round = 0; round < 8; round++) {
        const at = new Date(T0.getTime() + (round + 1) * 60_000);
        const mine = streams.map(([s, r]) => claim(s, r, { seen, at, holder: 'p1' }));
        const theirs = [...streams].reverse().map(([s, r]) => claim(s, r, { seen, at, holder: 'p2' }));
        const [a, b] = await Promise.all([claimDispatches(db.pool, mine), claimDispatches(other, theirs)]);
        const byA = new Set(mine.filter((_, i) => a[i]).map((c) => `${c.source}/${c.resource}`));
        const byB = new Set(theirs.filter((_, i) => b[i]).map((c) => `${c.source}/${c.resource}`));
        for (const [s, r] of streams) expect(Number(byA.has(`${s}/${r}`)) + Number(byB.has(`${s}/${r}`)), `${s}/${r}`).toBe(1);
        const rows = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pmsync.stream_schedule WHERE source LIKE 'c%' AND last_fire_at = $1`,
          [at],
        );
        expect(rows.rows[0]!.n).toBe(streams.length);
        seen = at;
      }
    } finally {
      await other.end();
    }
  });
});
