/**
 * pmsync.source_health in PostgreSQL: the backoff computed by one upsert
 * matches the policy, a failure while paused neither counts nor extends the
 * pause, replicas recording at once count one failure, a success ends it all,
 * and each change of the failing state is reported by exactly one caller.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { PAUSES, pauseMs, type FailureKind } from '../../src/scheduler/source-failures.ts';
import {
  loadSourceHealth,
  loadSourceHealthOf,
  markReported,
  recordSourceFailure,
  recordSourceSuccess,
  sourcePausedUntil,
} from '../../src/state/source-health.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

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
  await db.pool.query('DELETE FROM pmsync.source_health');
});

const T0 = Date.parse('2026-11-20T10:00:00Z');
const fail = (at: number, kind: FailureKind = 'server', pool: Pool = db.pool) =>
  recordSourceFailure(pool, { source: 'clinic', kind, code: 'RETRYABLE', message: `failed at ${at}`, at: new Date(at), ...PAUSES[kind] });

describe('source health', () => {
  it('pauses for the policy backoff after each failure that comes once the pause has ended', async () => {
    let at = T0;
    for (let n = 1; n <= 9; n++) {
      const h = await fail(at);
      expect(h.consecutiveFailures).toBe(n);
      expect(h.pausedUntil!.getTime() - at).toBe(pauseMs('server', n));
      expect(h.failingSince!.getTime()).toBe(T0);
      at = h.pausedUntil!.getTime() + 1;
    }
    const auth = await fail(at, 'auth');
    expect(auth.pausedUntil!.getTime() - at).toBe(pauseMs('auth', 10));
    expect(auth.lastFailureKind).toBe('auth');
  });

  it('does not count or extend a failure that ends while the source is already paused', async () => {
    const first = await fail(T0);
    const late = await fail(T0 + 30_000, 'timeout');
    expect(late.consecutiveFailures).toBe(1);
    expect(late.pausedUntil).toEqual(first.pausedUntil);
    expect(late.lastFailureKind).toBe('timeout');
    expect(await sourcePausedUntil(db.pool, 'clinic', new Date(T0 + 59_000))).toEqual(first.pausedUntil);
    expect(await sourcePausedUntil(db.pool, 'clinic', new Date(T0 + 60_000))).toBeNull();
  });

  it('counts one failure when replicas record at once', async () => {
    const rows = await Promise.all(Array.from({ length: 8 }, (_, i) => fail(T0, 'server', i % 2 ? second : db.pool)));
    expect(Math.max(...rows.map((r) => r.consecutiveFailures))).toBe(1);
    expect((await loadSourceHealth(db.pool)).get('clinic')!.consecutiveFailures).toBe(1);
  });

  it('ends the failures and the pause with a success, keeping the last error for the record', async () => {
    await fail(T0);
    await fail(T0 + 2 * 60_000);
    await recordSourceSuccess(db.pool, 'clinic', new Date(T0 + 3 * 60_000));
    const h = (await loadSourceHealth(db.pool)).get('clinic')!;
    expect(h).toMatchObject({ consecutiveFailures: 0, failingSince: null, pausedUntil: null, lastFailureKind: 'server' });
    expect(h.lastSuccessAt!.getTime()).toBe(T0 + 3 * 60_000);
    expect(h.lastError).toBe(`failed at ${T0 + 2 * 60_000}`);
    // The next failure starts from the first pause again.
    const again = await fail(T0 + 4 * 60_000);
    expect(again.pausedUntil!.getTime() - (T0 + 4 * 60_000)).toBe(pauseMs('server', 1));
  });

  it('reads the named sources only, as the whole table has them', async () => {
    await fail(T0);
    await recordSourceSuccess(db.pool, 'other', new Date(T0));
    await recordSourceSuccess(db.pool, 'third', new Date(T0));
    const named = await loadSourceHealthOf(db.pool, ['clinic', 'third', 'never-recorded']);
    expect([...named.keys()].sort()).toEqual(['clinic', 'third']);
    const all = await loadSourceHealth(db.pool);
    expect(named.get('clinic')).toEqual(all.get('clinic'));
    expect(named.get('third')).toEqual(all.get('third'));
    expect(await loadSourceHealthOf(db.pool, [])).toEqual(new Map());
  });

  it('reports each change of the failing state to exactly one caller', async () => {
    await recordSourceSuccess(db.pool, 'clinic', new Date(T0));
    expect(await markReported(db.pool, 'clinic', false)).toBe(false);
    await fail(T0 + 1);
    const claims = await Promise.all([markReported(db.pool, 'clinic', true), markReported(second, 'clinic', true)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await markReported(db.pool, 'clinic', false)).toBe(false); // still failing
    await recordSourceSuccess(db.pool, 'clinic', new Date(T0 + 2 * 60_000));
    const recovered = await Promise.all([markReported(db.pool, 'clinic', false), markReported(second, 'clinic', false)]);
    expect(recovered.filter(Boolean)).toHaveLength(1);
  });
});
