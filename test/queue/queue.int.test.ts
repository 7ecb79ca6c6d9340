/**
 * The job queue (src/queue.ts) on a real pg-boss: `serve` starts one pg-boss
 * for the run queue and the webhook refresh queue together; what waits, what
 * a worker here holds and the dead letters are read through pg-boss's API,
 * the same from a process that only reads; a reading queue over a database
 * pg-boss never ran on finds nothing and installs nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { jobQueueOf, openJobQueue, QUEUE_APPLICATION_NAME } from '../../src/queue.ts';
import { Redactor } from '../../src/redact.ts';
import { runQueueWait, runsInFlight } from '../../src/scheduler/dispatch.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { mountWebhooks } from '../../src/serve/webhooks.ts';
import { acquireSourceSlot, heldRunLocks, streamLockKey } from '../../src/state/locks.ts';
import { refreshQueueCounts } from '../../src/webhooks/queue.ts';
import { writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { openTestApp, type TestApp } from '../support/harness.ts';
import { scaled } from '../support/time-scale.ts';

const logger = createLogger(new Redactor(), { level: 'silent' });
const WORK = { mode: 'work', superviseSeconds: 10, connections: 2 } as const;

let db: TestDatabase;
const opened: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.stop();
});
afterAll(async () => {
  await db?.drop();
});

/** The LISTEN sessions pg-boss holds on the test database, by application_name: one per started instance. */
async function listeners(): Promise<Record<string, number>> {
  const res = await db.pool.query<{ name: string; n: number }>(
    `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND (query LIKE 'LISTEN %' OR query LIKE '%pg_listening_channels()%')
     GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(res.rows.map((r) => [r.name, r.n]));
}

describe('serve', () => {
  let app: TestApp | undefined;
  let serve: RunningServe | undefined;
  afterAll(async () => {
    await serve?.stop();
    await app?.close();
  });

  it('starts one pg-boss, holding the run queue and the webhook refresh queue', async () => {
    const file = writeConfig({
      sources: [{ name: 'clinic', kind: 'core', baseUrl: 'http://127.0.0.1:9/api/v1', apikey: 'k', username: 'u', password: 'p' }],
    });
    const loaded = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
    const config = { ...loaded, serve: { ...loaded.serve!, port: 0, host: '127.0.0.1' } };
    app = await openTestApp(config);
    serve = await startServe(app, config, { manualTicks: true, webhooks: mountWebhooks });

    // Each started pg-boss holds one LISTEN session of its own: one instance, named as the queue.
    expect(await listeners()).toEqual({ [QUEUE_APPLICATION_NAME]: 1 });
    expect(jobQueueOf(app.pool)).toBe(serve.queue);
    // Both queues are on it, and read through it.
    expect(await runQueueWait(app.pool)).toEqual({ waiting: 0, oldestWaitSeconds: 0 });
    expect(await refreshQueueCounts(app.pool)).toEqual({ ready: 0, deferred: 0, retrying: 0, active: 0, deadLettered: 0 });
    await expect(openJobQueue(app, WORK)).rejects.toThrow(/already open/);

    await serve.stop();
    serve = undefined;
    expect(await listeners()).toEqual({});
  });
});

describe('a job queue', () => {
  it('lists waiting jobs with their start, the jobs a worker here holds, and the dead letters, as a reading queue does', async () => {
    const pool = createPool(db.url, 2);
    opened.push({ stop: () => pool.end() });
    const queue = await openJobQueue({ databaseUrl: db.url, pool, logger }, WORK);
    opened.push(queue);
    await queue.ensure('dead', {});
    await queue.ensure('work', { policy: 'stately', retryLimit: 0, deadLetter: 'dead' });
    const later = new Date(Date.now() + 3_600_000);
    expect(await queue.send('work', { n: 1 }, { singletonKey: 'a' })).not.toBeNull();
    expect(await queue.send('work', { n: 2 }, { singletonKey: 'b', startAfter: later })).not.toBeNull();
    // Stately: one waiting job per key.
    expect(await queue.send('work', { n: 3 }, { singletonKey: 'a' })).toBeNull();
    const waiting = await queue.waiting<{ n: number }>('work');
    expect(waiting.map((j) => j.data.n).sort()).toEqual([1, 2]);
    expect(waiting.find((j) => j.data.n === 2)!.startAfter.getTime()).toBe(later.getTime());

    // A process that only reads, on its own pool, sees the same through pg-boss.
    const readPool = createPool(db.url, 2);
    opened.push({ stop: () => readPool.end() });
    const reader = await openJobQueue({ databaseUrl: db.url, pool: readPool, logger }, { mode: 'read' });
    opened.push(reader);
    expect((await reader.waiting<{ n: number }>('work')).map((j) => j.data.n).sort()).toEqual([1, 2]);
    expect(await reader.waiting('never-created')).toEqual([]);

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await queue.work<{ n: number }>('work', { pollingIntervalSeconds: 0.5 }, async ([job]) => {
      await gate;
      throw new Error(`job ${job!.data.n} failed`);
    });
    await until(() => queue.held('work').length === 1);
    expect(queue.held<{ n: number }>('work')[0]!.data.n).toBe(1);
    expect(queue.busy('work')).toBe(true);
    expect(queue.worked('work')).toBe(true);
    expect(reader.worked('work')).toBe(true);
    expect((await queue.waiting<{ n: number }>('work')).map((j) => j.data.n)).toEqual([2]);

    // It fails with no retry left: a dead letter, counted by pg-boss's redrive preview.
    release();
    await until(async () => (await reader.deadLetterCount('dead')) === 1);
    await until(() => !queue.busy('work'));
    expect(queue.held('work')).toEqual([]);
    const [dead] = await reader.waiting<{ n: number }>('dead');
    expect(dead!.data.n).toBe(1);
    expect(dead!.sourceOutput).toMatchObject({ message: 'job 1 failed' });
    expect(await queue.redrive('dead')).toBe(1);
    expect(await reader.deadLetterCount('dead')).toBe(0);
  });

  it('that only reads a database pg-boss never ran on finds nothing and installs nothing', async () => {
    const bare = await createTestDatabase({ migrate: false });
    try {
      const reader = await openJobQueue({ databaseUrl: bare.url, pool: bare.pool, logger }, { mode: 'read' });
      try {
        expect(await reader.waiting('pmsync-run')).toEqual([]);
        expect(await reader.deadLetterCount('pmsync-refresh-dead')).toBe(0);
        expect(await reader.monitored('pmsync-refresh')).toEqual({ active: 0, keys: [] });
      } finally {
        await reader.stop();
      }
      const schema = await bare.pool.query<{ s: string | null }>(`SELECT to_regnamespace('pgboss')::text AS s`);
      expect(schema.rows[0]!.s).toBeNull();
    } finally {
      await bare.drop();
    }
  });
});

describe('a run slot', () => {
  it('holds its stream run lock, seen from any session, until released', async () => {
    const slot = await acquireSourceSlot(db.url, 'clinic', 'customers', 2);
    expect(slot).not.toBeNull();
    expect((await heldRunLocks(db.pool)).has(streamLockKey('clinic', 'customers'))).toBe(true);
    // The decider asks which of its streams have a run in flight with the same list at every tick: a held lock is
    // found among them, and once released it is not, the list asked with again.
    const streams = ['clinic/customers', 'clinic/orders', 'spa/customers'];
    const reader = await openJobQueue({ databaseUrl: db.url, pool: db.pool, logger }, { mode: 'read' });
    try {
      expect(await runsInFlight(db.pool, streams)).toEqual(new Set(['clinic/customers']));
      await slot!.release();
      expect((await heldRunLocks(db.pool)).size).toBe(0);
      expect(await runsInFlight(db.pool, streams)).toEqual(new Set());
    } finally {
      await reader.stop();
    }
  });
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
