/**
 * The set-based reads behind the fleet summary, against PostgreSQL: each
 * answers for many sources with one query exactly what its per-source
 * counterpart answers for each one, and the failures read from the runs
 * count failed runs in a row and are redacted. The change models are read a
 * batch of streams a query, each as it reads alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addObservation, loadChangeModels, loadChangeModelsOf, loadStreamModels } from '../../src/state/change-model.ts';
import { completeWindow, readCheckpoints, readCheckpointsOf, saveWindow } from '../../src/state/checkpoints.ts';
import { QuotaLedger, quotaSnapshots, type QuotaSettings } from '../../src/state/quota.ts';
import {
  changesFoundOf,
  changesFoundSince,
  finishRun,
  recentCheckCosts,
  recentCheckCostsOf,
  recentOutcomes,
  recentWindows,
  recentWindowsOf,
  startRun,
  type RunStatus,
} from '../../src/state/runs.ts';
import { claimDispatch, loadStreamSchedules, loadStreamSchedulesOf, setWarning } from '../../src/state/stream-schedule.ts';
import { readFailures } from '../../src/status/fleet.ts';
import { MODEL_BATCH_STREAMS, readModels } from '../../src/scheduler/observe.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const NOW = new Date('2026-03-12T23:30:00Z');

async function run(source: string, resource: string, status: RunStatus, extra: { requests?: number; errorMessage?: string } = {}) {
  const id = await startRun(db.pool, { source, resource, mode: 'incremental', purpose: 'check', windowStart: null, windowEnd: null });
  if (status !== 'running') await finishRun(db.pool, id, status, { ...extra, errorCode: status === 'failed' ? 'AUTH_FAILED' : undefined });
  return id;
}

describe('the quota snapshots of many keys', () => {
  const key = (keyId: string, over: Partial<QuotaSettings> = {}): QuotaSettings => ({
    keyId,
    dailyLimit: 1000,
    reservePercent: 10,
    budget: 150,
    timeZone: 'UTC',
    resetHour: 0,
    label: keyId,
    ...over,
  });
  // At 23:30 UTC it is already the 13th in Berlin; a key resetting at 06:00 UTC is on the day that began on the 12th.
  const keys = [key('k_utc'), key('k_berlin', { timeZone: 'Europe/Berlin' }), key('k_six', { resetHour: 6 }), key('k_none')];

  it('reads each key on its own quota day, with one query, as its ledger does', async () => {
    await db.pool.query(
      `INSERT INTO pmsync.quota_usage (key_id, quota_day, used, used_check, used_backfill, daily_limit, budget, exhausted_until, updated_at) VALUES
       ('k_utc', '2026-03-12', 30, 10, 20, 1000, 150, NULL, now()),
       ('k_utc', '2026-03-11', 999, 150, 849, 1000, 150, NULL, now()),
       ('k_berlin', '2026-03-13', 7, 7, 0, 1000, 150, '2026-03-13T23:00:00Z', now()),
       ('k_berlin', '2026-03-12', 500, 100, 400, 1000, 150, NULL, now()),
       ('k_six', '2026-03-12', 12, 2, 10, 1000, 150, '2026-03-12T20:00:00Z', now())`,
    );
    const batch = await quotaSnapshots(db.pool, keys, NOW);
    const single = await Promise.all(keys.map((k) => new QuotaLedger(db.pool, k, () => NOW).snapshot()));
    expect(batch).toEqual(single);
    expect(batch.map((s) => [s.day, s.used, s.budgetUsed, s.exhaustedUntil?.toISOString() ?? null])).toEqual([
      ['2026-03-12', 30, 10, null],
      ['2026-03-13', 7, 7, '2026-03-13T23:00:00.000Z'],
      // A 429 window that has passed is no longer in force.
      ['2026-03-12', 12, 2, null],
      ['2026-03-12', 0, 0, null],
    ]);
    expect(await quotaSnapshots(db.pool, [], NOW)).toEqual([]);
  });
});

describe('stream schedules, checkpoints and change models of many sources', () => {
  beforeAll(async () => {
    for (const source of ['s1', 's2']) {
      await claimDispatch(db.pool, {
        source,
        resource: 'customers',
        seen: null,
        at: NOW,
        purpose: 'check',
        reason: 'rate',
        holder: 'h:1',
      });
      await setWarning(db.pool, source, 'orders', `${source} is late`);
      await completeWindow(db.pool, source, 'customers', new Date('2026-03-12T22:00:00Z'), null);
      await addObservation(db.pool, source, 'customers', NOW, { changes: new Map([[3, 2]]), exposure: new Map([[3, 1]]) });
    }
    await saveWindow(
      db.pool,
      's2',
      'orders',
      {
        mode: 'incremental',
        start: null,
        end: '2026-03-12T23:00:00.000Z',
        nextPage: 4,
        filters: {},
        startedAt: '2026-03-12T23:00:00.000Z',
        totalRows: null,
        purpose: 'backfill',
      },
      NOW,
    );
    await db.pool.query(`INSERT INTO pmsync.sync_state (source, resource, "window") VALUES ('s2', 'damaged', '{"mode": 1}')`);
  });

  it('answers for each source what the per-source read answers', async () => {
    const sources = ['s1', 's2', 'nobody'];
    const [schedules, checkpoints, models] = await Promise.all([
      loadStreamSchedulesOf(db.pool, sources),
      readCheckpointsOf(db.pool, sources),
      loadChangeModelsOf(db.pool, sources),
    ]);
    for (const source of ['s1', 's2']) {
      expect(schedules.get(source)).toEqual(await loadStreamSchedules(db.pool, source));
      const sorted = (list: Awaited<ReturnType<typeof readCheckpoints>>) => [...list].sort((a, b) => a.resource.localeCompare(b.resource));
      expect(sorted(checkpoints.get(source)!)).toEqual(sorted(await readCheckpoints(db.pool, source)));
      expect(models.get(source)).toEqual(await loadChangeModels(db.pool, source));
    }
    expect(schedules.has('nobody') || checkpoints.has('nobody') || models.has('nobody')).toBe(false);
    expect(checkpoints.get('s2')!.find((c) => c.resource === 'damaged')).toMatchObject({ open: true, window: null });
    expect(checkpoints.get('s2')!.find((c) => c.resource === 'orders')!.window).toMatchObject({ purpose: 'backfill', nextPage: 4 });
  });
});

describe('runs of many streams', () => {
  beforeAll(async () => {
    await run('r1', 'customers', 'succeeded', { requests: 4 });
    await run('r1', 'customers', 'failed', { errorMessage: 'refused with apikey=secret-Key-77' });
    await run('r1', 'customers', 'failed', { errorMessage: 'refused with apikey=secret-Key-77\nsecond line' });
    await run('r1', 'customers', 'running');
    await run('r1', 'orders', 'failed', { errorMessage: 'boom' });
    await run('r1', 'orders', 'succeeded', { requests: 2 });
    await run('r2', 'customers', 'quota_exhausted');
    for (let i = 1; i <= 7; i++) await run('r2', 'orders', 'succeeded', { requests: i });
  });
  const streams = [
    { source: 'r1', resource: 'customers' },
    { source: 'r1', resource: 'orders' },
    { source: 'r2', resource: 'customers' },
    { source: 'r2', resource: 'orders' },
    { source: 'r2', resource: 'never' },
  ];

  it('reads the latest finished outcomes of each stream, newest first, without the running one', async () => {
    const outcomes = await recentOutcomes(db.pool, streams, 2);
    expect(outcomes.get('r1/customers')!.map((o) => [o.status, o.errorCode])).toEqual([
      ['failed', 'AUTH_FAILED'],
      ['failed', 'AUTH_FAILED'],
    ]);
    expect(outcomes.get('r1/orders')!.map((o) => o.status)).toEqual(['succeeded', 'failed']);
    expect(outcomes.get('r2/orders')).toHaveLength(2);
    expect(outcomes.has('r2/never')).toBe(false);
  });

  it('averages the latest check costs of each stream as the per-source read does', async () => {
    const batch = await recentCheckCostsOf(db.pool, streams, 5);
    for (const source of ['r1', 'r2']) {
      for (const [resource, cost] of await recentCheckCosts(db.pool, source, 5)) expect(batch.get(`${source}/${resource}`)).toBe(cost);
    }
    expect(batch.get('r2/orders')).toBe(5); // the last five: 3..7
  });

  it('counts a stream as failing when its latest finished run failed, with how many in a row, redacted', async () => {
    const failures = await readFailures(db.pool, streams, (text) => text.replaceAll('secret-Key-77', '[REDACTED]'));
    expect([...failures.keys()]).toEqual(['r1']);
    expect(failures.get('r1')).toEqual([
      { resource: 'customers', failedInARow: 2, code: 'AUTH_FAILED', message: 'refused with apikey=[REDACTED]', at: expect.any(String) },
    ]);
  });
});

describe('the change models of many streams', () => {
  it('come back as each stored row holds them, to the last bit', async () => {
    // Each stream's slots come as one bytea of binary numbers (src/state/change-model.ts): every float8 must read back
    // exactly as the driver reads a column, whatever its magnitude, and every slot of the stream must be there. Also
    // on a connection whose extra_float_digits rounds floats printed as text (a pooler or a role may set it).
    const awkward = [0.1 + 0.2, 1e-300, 2.2250738585072014e-308, 123456789.12345679, 1 / 3, 2 ** 53 + 2, 1e21, 0];
    await db.pool.query(
      `INSERT INTO pmsync.change_model (source, resource, slot, changes, exposure_hours, recent_changes, recent_exposure_hours, as_of)
       SELECT 'exact', 'customers', slot, v.x * (slot + 1), v.x / 7, -v.x, v.x * 1e-10, $2::timestamptz - make_interval(secs => slot * 1.234)
       FROM generate_series(0, 167) slot, LATERAL (SELECT ($1::float8[])[1 + slot % 8] AS x) v`,
      [awkward, NOW],
    );
    const rows = (await loadChangeModels(db.pool, 'exact')).get('customers')!;
    const rounding = await db.pool.connect();
    try {
      await rounding.query('SET extra_float_digits = 0');
      for (const client of [db.pool, rounding]) {
        const read = (await loadStreamModels(client, [{ source: 'exact', resource: 'customers' }])).get('exact')!.get('customers')!;
        const bySlot = (list: typeof rows) => [...list].sort((a, b) => a.slot - b.slot);
        expect(read).toHaveLength(168);
        expect(bySlot(read)).toEqual(bySlot(rows));
        expect(bySlot(read).map((r) => Object.is(r.recentChanges, -0))).toEqual(bySlot(rows).map((r) => Object.is(r.recentChanges, -0)));
      }
    } finally {
      rounding.release();
    }
  });

  it('are read a batch of streams a query, each as it reads alone', async () => {
    // More streams than a batch: a fleet's first tick reads every stream's 168 slots, and held at once they set the
    // replica's peak memory.
    const streams: Array<{ source: string; resource: string }> = [];
    for (let i = 0; i < MODEL_BATCH_STREAMS / 10 + 5; i++)
      for (let j = 0; j < 10; j++) streams.push({ source: `m${i}`, resource: `r${j}` });
    await db.pool.query(
      `INSERT INTO pmsync.change_model (source, resource, slot, changes, exposure_hours, recent_changes, recent_exposure_hours, as_of)
       SELECT k.source, k.resource, slot, (slot % 7) + length(k.source), 1 + slot % 3, slot % 2, 0.5, $3::timestamptz - make_interval(hours => slot)
       FROM unnest($1::text[], $2::text[]) AS k(source, resource), generate_series(0, 167) slot`,
      [streams.map((s) => s.source), streams.map((s) => s.resource), NOW],
    );
    let queries = 0;
    const counted = {
      query: (...args: Parameters<typeof db.pool.query>) => (queries++, db.pool.query(...args)),
    } as unknown as typeof db.pool;
    const zone = () => 'America/New_York';
    const all = await readModels(counted, streams, NOW, zone);
    expect(queries).toBe(Math.ceil(streams.length / MODEL_BATCH_STREAMS));
    expect(queries).toBeGreaterThan(1);
    for (const s of streams) {
      const alone = await readModels(db.pool, [s], NOW, zone);
      expect(all.get(s.source)!.get(s.resource)).toEqual(alone.get(s.source)!.get(s.resource));
      expect(
        all
          .get(s.source)!
          .get(s.resource)!
          .rates.some((r) => r > 0),
      ).toBe(true);
    }
  });
});

describe('the changes found and the windows of many sources, each from its own start', () => {
  const at = (h: number) => new Date(NOW.getTime() - h * 3_600_000);
  // Each source's quota day starts at its own instant: w1's 10 hours ago, w2's 4 hours ago.
  const since = [
    { source: 'w1', since: at(10) },
    { source: 'w2', since: at(4) },
  ];
  beforeAll(async () => {
    const runs: Array<[string, string, number, number, number, string]> = [
      // source, resource, window end (hours ago), inserted, updated, purpose
      ['w1', 'customers', 12, 100, 0, 'check'],
      ['w1', 'customers', 8, 2, 3, 'check'],
      ['w1', 'customers', 1, 0, 4, 'webhook'],
      ['w1', 'orders', 6, 1, 1, 'check'],
      ['w1', 'orders', 2, 0, 0, 'full'],
      ['w2', 'customers', 8, 50, 0, 'check'],
      ['w2', 'customers', 3, 7, 0, 'check'],
      ['w2', 'orders', 5, 9, 9, 'check'],
      ['w2', 'orders', 1, 1, 0, 'check'],
      // Another source's runs and a backfill are not counted.
      ['w3', 'orders', 1, 30, 0, 'check'],
      ['w2', 'orders', 2, 40, 0, 'backfill'],
    ];
    for (const [source, resource, end, inserted, updated, purpose] of runs) {
      await db.pool.query(
        `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, started_at, ended_at, window_start, window_end, pages, requests, inserted, updated)
         VALUES ($1, $2, 'incremental', $3, 'succeeded', $5, $5, $4, $5, 1, 1, $6, $7)`,
        [source, resource, purpose, new Date(at(end).getTime() - 600_000), at(end), inserted, updated],
      );
    }
  });

  it('sums each source from its own start, as the per-source read does', async () => {
    const found = await changesFoundOf(db.pool, since);
    for (const { source, since: from } of since) expect(found.get(source)).toEqual(await changesFoundSince(db.pool, source, from));
    expect(Object.fromEntries(found.get('w1')!)).toEqual({ customers: 9, orders: 2 });
    expect(Object.fromEntries(found.get('w2')!)).toEqual({ customers: 7, orders: 1 });
  });

  it('keeps the streams asked for, and only those, when read in part', async () => {
    const only = [
      { source: 'w1', resource: 'orders' },
      { source: 'w2', resource: 'customers' },
    ];
    const found = await changesFoundOf(db.pool, since, only);
    expect(Object.fromEntries(found.get('w1')!)).toEqual({ orders: 2 });
    expect(Object.fromEntries(found.get('w2')!)).toEqual({ customers: 7 });

    const windows = await recentWindowsOf(db.pool, ['w1', 'w2'], at(10), 12, only);
    expect([...windows.get('w1')!.keys()]).toEqual(['orders']);
    expect([...windows.get('w2')!.keys()]).toEqual(['customers']);
    expect(windows.get('w1')!.get('orders')).toEqual((await recentWindows(db.pool, 'w1', at(10), 12)).get('orders'));
    expect(windows.get('w2')!.get('customers')).toEqual((await recentWindows(db.pool, 'w2', at(10), 12)).get('customers'));
  });
});
