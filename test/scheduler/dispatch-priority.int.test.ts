/**
 * The run queue's order on a real pg-boss: a free worker takes webhook-
 * triggered checks, then checks, then full refreshes, then backfills, oldest
 * first within each; the per-source group limit and the one-job-per-stream
 * singleton still hold with priorities, and a source at its limit never keeps
 * another's lower-priority job waiting.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDispatcher, SUPERVISE_SECONDS, type Dispatcher, type RunJob } from '../../src/scheduler/dispatch.ts';
import { openJobQueue, type JobQueue } from '../../src/queue.ts';
import type { Purpose } from '../../src/api/http.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { scaled } from '../support/time-scale.ts';

let db: TestDatabase;
let queue: JobQueue | null = null;
const logger = createLogger(new Redactor(), { level: 'silent' });

beforeAll(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await queue?.stop();
  queue = null;
});

async function open(): Promise<Dispatcher> {
  queue = await openJobQueue(
    { databaseUrl: db.url, pool: db.pool, logger },
    { mode: 'work', superviseSeconds: SUPERVISE_SECONDS, connections: 4 },
  );
  return openDispatcher(queue, { databaseUrl: db.url, heartbeatSeconds: 30 });
}
afterAll(async () => {
  await db?.drop();
});

const job = (source: string, resource: string, purpose: Purpose): RunJob => ({
  source,
  resource,
  purpose,
  reason: purpose,
  firedAt: new Date().toISOString(),
});
const name = (j: Pick<RunJob, 'source' | 'resource'>) => `${j.source}/${j.resource}`;

describe('the run queue', () => {
  it('takes waiting checks before a backfill queued earlier, with one worker', async () => {
    const dispatcher = await open();
    // One practice's backfills were queued first; other practices' runs come after.
    for (const j of [
      job('big', 'customers', 'backfill'),
      job('big', 'orders', 'backfill'),
      job('b', 'customers', 'check'),
      job('d', 'services', 'full'),
      job('c', 'appointments', 'webhook'),
      job('b', 'orders', 'check'),
    ])
      expect(await dispatcher.dispatch(j)).toBe(true);
    const taken: string[] = [];
    await dispatcher.work(1, 2, async (j) => {
      taken.push(name(j));
    });
    await dispatcher.drained(db.pool);
    expect(taken).toEqual(['c/appointments', 'b/customers', 'b/orders', 'd/services', 'big/customers', 'big/orders']);
  });

  it('keeps a source to its group limit and a stream to one waiting job, whatever the priorities', async () => {
    const dispatcher = await open();
    for (const r of ['a', 'b', 'c']) expect(await dispatcher.dispatch(job('busy', r, 'webhook'))).toBe(true);
    expect(await dispatcher.dispatch(job('quiet', 'customers', 'backfill'))).toBe(true);
    // The stream already has a job waiting: a higher-priority one is not added beside it.
    expect(await dispatcher.dispatch(job('quiet', 'customers', 'webhook'))).toBe(false);

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const running = new Set<string>();
    await dispatcher.work(3, 2, async (j) => {
      running.add(name(j));
      await gate;
    });
    // Three workers: two take busy's webhook checks (its limit), the third the quiet backfill, not busy's third check.
    await waitFor(() => running.size === 3);
    expect([...running].filter((k) => k.startsWith('busy/'))).toHaveLength(2);
    expect(running.has('quiet/customers')).toBe(true);
    const active = await db.pool.query<{ group_id: string; n: number }>(
      `SELECT group_id, count(*)::int AS n FROM pgboss.job WHERE name = 'pmsync-run' AND state = 'active' GROUP BY group_id ORDER BY group_id`,
    );
    expect(active.rows).toEqual([
      { group_id: 'busy', n: 2 },
      { group_id: 'quiet', n: 1 },
    ]);
    release();
    await dispatcher.drained(db.pool);
    expect(running.size).toBe(4);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
