/**
 * Stream locks between real processes: what one holds, no other gets, and a
 * holder that dies (even by SIGKILL) frees its lock at once.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { scaled } from '../support/time-scale.ts';
import { acquireStreamLock, heldStreamLocks, schedulingLeadership, streamLockKey } from '../../src/state/locks.ts';

const HOLDER = fileURLToPath(new URL('./support/hold-lock.ts', import.meta.url));
let db: TestDatabase;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await db.drop();
});

function holder(resource: string, waitMs = 0) {
  const child = spawn(process.execPath, [HOLDER, db.url, 'core', resource, String(waitMs)]);
  children.push(child);
  let out = '';
  const lines: Array<(line: string) => void> = [];
  child.stdout.on('data', (d) => {
    out += String(d);
    const parts = out.split('\n');
    out = parts.pop()!;
    for (const p of parts) lines.shift()?.(p);
  });
  const nextLine = () => new Promise<string>((resolve) => lines.push(resolve));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, nextLine, exited };
}

describe('stream locks', () => {
  it('exclude other processes until the holder releases', async () => {
    const a = holder('customers');
    expect(await a.nextLine()).toBe('locked');

    const b = holder('customers');
    expect(await b.nextLine()).toBe('busy');
    expect(await b.exited).toBe(3);
    expect(await acquireStreamLock(db.pool, 'core', 'customers')).toBeNull();

    const other = await acquireStreamLock(db.pool, 'core', 'orders');
    expect(other).not.toBeNull();
    await other!.release();

    const held = await heldStreamLocks(db.pool);
    expect(held.map((h) => h.key)).toEqual([streamLockKey('core', 'customers')]);
    expect(held[0]!.holder).toMatch(/^pmsync lock core\/customers /);

    a.child.stdin.end();
    expect(await a.nextLine()).toBe('released');
    const mine = await acquireStreamLock(db.pool, 'core', 'customers');
    expect(mine).not.toBeNull();
    await mine!.release();
  });

  it('pass to a waiting process the moment a holder is killed', async () => {
    const a = holder('appointments');
    expect(await a.nextLine()).toBe('locked');
    const waiter = holder('appointments', scaled(60_000));
    a.child.kill('SIGKILL');
    expect(await waiter.nextLine()).toBe('locked');
    waiter.child.stdin.end();
    expect(await waiter.nextLine()).toBe('released');
  });

  it('give up after the wait and stop waiting on abort', async () => {
    const a = holder('orders');
    expect(await a.nextLine()).toBe('locked');
    // The wait runs on a clock that each sleep moves forward: no wall-clock time is spent.
    let clock = 0;
    const sleeps: number[] = [];
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      clock += ms;
    };
    expect(await acquireStreamLock(db.pool, 'core', 'orders', { waitMs: 1200, sleep, now: () => clock })).toBeNull();
    expect(sleeps.length).toBeGreaterThan(1);
    expect(clock).toBe(1200);
    const abort = new AbortController();
    abort.abort();
    expect(await acquireStreamLock(db.pool, 'core', 'orders', { waitMs: 60_000, signal: abort.signal })).toBeNull();
    a.child.stdin.end();
    expect(await a.nextLine()).toBe('released');
  });
});

describe('scheduling leadership', () => {
  it('is held by one replica at a time, handed over on release, and taken over when its holder is gone', async () => {
    const a = schedulingLeadership(db.pool);
    const b = schedulingLeadership(db.pool);
    expect(await a.lead()).toBe(true);
    expect(await b.lead()).toBe(false);
    expect(await a.lead()).toBe(true);
    await a.release();
    expect(await a.lead()).toBe(false); // a released leadership is not taken again
    expect(await b.lead()).toBe(true);

    // The holder's session ends without a release (a killed replica): the next tick elsewhere takes over.
    const c = schedulingLeadership(db.pool);
    expect(await c.lead()).toBe(false);
    const killed = await db.pool.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pmsync scheduler %' AND datname = current_database() AND pid <> pg_backend_pid()`,
    );
    expect(killed.rows[0]!.n).toBe(1);
    await expect.poll(() => c.lead(), { interval: 20, timeout: scaled(10_000) }).toBe(true);
    expect(await b.lead()).toBe(false);
    await b.release();
    await c.release();
  });
});
