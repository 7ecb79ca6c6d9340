/**
 * The scheduler against a real PostgreSQL, with its timers replaced by direct
 * ticks so each case says exactly which fires happen.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { Scheduler, type FireReason, type StreamRunOutcome, type TickOutcome } from '../../src/scheduler/scheduler.ts';
import { timerGroups, type Schedule } from '../../src/scheduler/plan.ts';

const logger = pino({ level: 'silent' });
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());
beforeEach(async () => {
  await db.pool.query('TRUNCATE pmsync.schedules, pmsync.sync_state');
});

const schedule = (resource: string, cron = '*/15 * * * *', source = 'core'): Schedule => ({
  key: `${source}/${resource}`,
  source,
  resource,
  mode: 'incremental',
  cron,
  timeZone: 'UTC',
  order: 0,
});

interface Harness {
  scheduler: Scheduler;
  calls: Array<{ key: string; reason: FireReason }>;
  ticks: Array<{ key: string; outcome: TickOutcome | 'locked' }>;
  /** Runs block until released when `hold` is set. */
  release: () => void;
}

function harness(
  schedules: Schedule[],
  now: Date,
  opts: { catchUp?: boolean; hold?: boolean; outcome?: StreamRunOutcome; holder?: string } = {},
): Harness {
  const calls: Harness['calls'] = [];
  const ticks: Harness['ticks'] = [];
  let release = () => undefined as void;
  let gate: Promise<void> = Promise.resolve();
  if (opts.hold) gate = new Promise<void>((r) => (release = r));
  const scheduler = new Scheduler(schedules, {
    pool: db.pool,
    logger,
    now: () => now,
    holder: opts.holder ?? 'test:1',
    catchUp: opts.catchUp ?? true,
    timers: () => ({ stop: () => undefined }),
    runStream: async (s, reason) => {
      calls.push({ key: s.key, reason });
      await gate;
      return opts.outcome ?? { locked: false };
    },
    onTick: (s, outcome) => ticks.push({ key: s.key, outcome }),
  });
  return { scheduler, calls, ticks, release: () => release() };
}

const lastFire = async (key: string) =>
  (await db.pool.query<{ last_fire_at: Date | null }>('SELECT last_fire_at FROM pmsync.schedules WHERE key = $1', [key])).rows[0]
    ?.last_fire_at ?? null;

describe('catch-up after downtime', () => {
  it('runs a schedule missed while nothing was up exactly once, and not again on the next start', async () => {
    const s = schedule('customers', '0 2 * * *');
    await db.pool.query(
      `INSERT INTO pmsync.schedules (key, source, resource, cron, time_zone, last_fire_at) VALUES ($1, 'core', 'customers', $2, 'UTC', '2026-11-19T02:00:00Z')`,
      [s.key, s.cron],
    );
    const now = new Date('2026-11-22T08:00:00Z');

    const first = harness([s], now);
    await first.scheduler.start();
    await first.scheduler.idle();
    expect(first.calls).toEqual([{ key: 'core/customers', reason: 'catch-up' }]);
    expect(await lastFire(s.key)).toEqual(new Date('2026-11-22T02:00:00Z'));

    const second = harness([s], now, { holder: 'test:2' });
    await second.scheduler.start();
    await second.scheduler.idle();
    expect(second.calls).toEqual([]);
  });

  it('loads a schedule never fired before at the first start, unless catch-up is off', async () => {
    const now = new Date('2026-11-22T08:07:00Z');
    const off = harness([schedule('orders')], now, { catchUp: false });
    await off.scheduler.start();
    await off.scheduler.idle();
    expect(off.calls).toEqual([]);
    expect(await lastFire('core/orders')).toBeNull();

    const on = harness([schedule('orders')], now);
    await on.scheduler.start();
    await on.scheduler.idle();
    expect(on.calls).toEqual([{ key: 'core/orders', reason: 'catch-up' }]);
    expect(await lastFire('core/orders')).toEqual(new Date('2026-11-22T08:00:00Z'));
  });

  it('resumes at once a stream whose last run stopped part-way through a window', async () => {
    const s = schedule('orders');
    const now = new Date('2026-11-22T08:07:00Z');
    await db.pool.query(
      `INSERT INTO pmsync.schedules (key, source, resource, cron, time_zone, last_fire_at) VALUES ($1, 'core', 'orders', $2, 'UTC', '2026-11-22T08:00:00Z')`,
      [s.key, s.cron],
    );
    await db.pool.query(`INSERT INTO pmsync.sync_state (source, resource, "window") VALUES ('core', 'orders', '{"nextPage": 3}')`);
    const h = harness([s], now);
    await h.scheduler.start();
    await h.scheduler.idle();
    expect(h.calls).toEqual([{ key: 'core/orders', reason: 'resume' }]);
  });
});

describe('ticks', () => {
  it('skips a tick whose previous run is still going instead of stacking it', async () => {
    const s = schedule('customers');
    const now = new Date('2026-11-22T08:00:30Z');
    const h = harness([s], now, { catchUp: false, hold: true });
    await h.scheduler.start();
    const [group] = timerGroups([s]);
    expect(await h.scheduler.tick(group!, new Date('2026-11-22T08:00:00Z'))).toEqual(['queued']);
    expect(await h.scheduler.tick(group!, new Date('2026-11-22T08:15:00Z'))).toEqual(['skipped_running']);
    expect(h.scheduler.running()).toEqual(['core/customers']);
    h.release();
    await h.scheduler.idle();
    expect(await h.scheduler.tick(group!, new Date('2026-11-22T08:30:00Z'))).toEqual(['queued']);
    await h.scheduler.idle();
    expect(h.calls.length).toBe(2);
  });

  it('lets exactly one of two processes run a fire', async () => {
    const s = schedule('customers');
    const now = new Date('2026-11-22T08:00:30Z');
    const a = harness([s], now, { catchUp: false, holder: 'a:1' });
    const b = harness([s], now, { catchUp: false, holder: 'b:1' });
    await a.scheduler.start();
    await b.scheduler.start();
    const [group] = timerGroups([s]);
    const slot = new Date('2026-11-22T08:00:00Z');
    const outcomes = (await Promise.all([a.scheduler.tick(group!, slot), b.scheduler.tick(group!, slot)])).flat();
    expect(outcomes.sort()).toEqual(['not_elected', 'queued']);
    await Promise.all([a.scheduler.idle(), b.scheduler.idle()]);
    expect(a.calls.length + b.calls.length).toBe(1);
  });

  it("runs one source's streams one after another, in stream order", async () => {
    const order: string[] = [];
    const schedules = [
      { ...schedule('companies'), order: 0 },
      { ...schedule('customers'), order: 1 },
      { ...schedule('orders'), order: 2 },
    ];
    let active = 0;
    const scheduler = new Scheduler(schedules, {
      pool: db.pool,
      logger,
      now: () => new Date('2026-11-22T08:00:30Z'),
      holder: 'test:1',
      catchUp: false,
      timers: () => ({ stop: () => undefined }),
      runStream: async (s) => {
        active += 1;
        expect(active).toBe(1);
        order.push(s.resource);
        await new Promise((r) => setImmediate(r));
        active -= 1;
        return { locked: false };
      },
    });
    await scheduler.start();
    await scheduler.tick(timerGroups(schedules)[0]!, new Date('2026-11-22T08:00:00Z'));
    await scheduler.idle();
    expect(order).toEqual(['companies', 'customers', 'orders']);
  });

  it('reports a run skipped because another process holds the stream lock', async () => {
    const s = schedule('customers');
    const h = harness([s], new Date('2026-11-22T08:00:30Z'), { catchUp: false, outcome: { locked: true } });
    await h.scheduler.start();
    await h.scheduler.tick(timerGroups([s])[0]!, new Date('2026-11-22T08:00:00Z'));
    await h.scheduler.idle();
    expect(h.ticks).toEqual([
      { key: 'core/customers', outcome: 'queued' },
      { key: 'core/customers', outcome: 'locked' },
    ]);
  });

  it("holds a source's ticks after its quota ran out, until the reset", async () => {
    const s = schedule('customers');
    const h = harness([s], new Date('2026-11-22T08:00:30Z'), {
      catchUp: false,
      outcome: { locked: false, quotaResumeAt: new Date('2026-11-23T00:00:00Z') },
    });
    await h.scheduler.start();
    const [group] = timerGroups([s]);
    await h.scheduler.tick(group!, new Date('2026-11-22T08:00:00Z'));
    await h.scheduler.idle();
    expect(await h.scheduler.tick(group!, new Date('2026-11-22T08:15:00Z'))).toEqual(['paused']);
    expect(h.calls.length).toBe(1);
  });

  it('on stop, drops queued runs and hands their fires back', async () => {
    const a = schedule('customers');
    const b = schedule('orders');
    const h = harness([a, b], new Date('2026-11-22T08:00:30Z'), { catchUp: false, hold: true });
    await h.scheduler.start();
    const slot = new Date('2026-11-22T08:00:00Z');
    expect(await h.scheduler.tick(timerGroups([a, b])[0]!, slot)).toEqual(['queued', 'queued']);
    const stopped = h.scheduler.stop(10_000);
    h.release();
    expect(await stopped).toBe(true);
    expect(h.calls.map((c) => c.key)).toEqual(['core/customers']);
    expect(await lastFire('core/customers')).toEqual(slot);
    expect(await lastFire('core/orders')).toBeNull();
    expect(await h.scheduler.tick(timerGroups([a])[0]!, new Date('2026-11-22T08:15:00Z'))).toEqual(['stopping']);
  });
});
