/**
 * Stream locks between real processes: what one holds, no other gets, and a
 * holder that dies (even by SIGKILL) frees its lock at once.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { scaled } from '../support/time-scale.ts';
import {
  acquireStreamLock,
  heldStreamLocks,
  SCHEDULING_SHARDS,
  shardHolders,
  shardLeases,
  streamLockKey,
  trySchedulingPass,
} from '../../src/state/locks.ts';

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

describe('scheduling shards', () => {
  /** Each shard's holders (pid of the session holding its lock), as PostgreSQL says. */
  async function owners(): Promise<Map<number, number[]>> {
    const res = await db.pool.query<{ shard: number; pids: number[] }>(
      `SELECT objid::int AS shard, array_agg(pid) AS pids FROM pg_locks
       WHERE locktype = 'advisory' AND granted AND classid = 727006 AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       GROUP BY objid`,
    );
    return new Map(res.rows.map((r) => [r.shard, r.pids]));
  }

  it('are shared evenly by the replicas, each held by one, given back on release and taken over from a replica that died', async () => {
    const a = shardLeases(db.pool);
    expect((await a.sync()).size).toBe(SCHEDULING_SHARDS);
    const b = shardLeases(db.pool);
    // A new replica finds every shard taken; the first gives back what exceeds its share at its next tick.
    expect((await b.sync()).size).toBe(0);
    expect((await a.sync()).size).toBe(SCHEDULING_SHARDS / 2);
    expect((await b.sync()).size).toBe(SCHEDULING_SHARDS / 2);
    const c = shardLeases(db.pool);
    await c.sync();
    for (let i = 0; i < 3; i++) for (const r of [a, b, c]) await r.sync();
    const sizes = [a, b, c].map((r) => r.held.size).sort();
    expect(sizes.reduce((x, y) => x + y, 0)).toBe(SCHEDULING_SHARDS);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(Math.ceil(SCHEDULING_SHARDS / 3));
    // Each shard is held by exactly one session, and the replicas agree with PostgreSQL on which.
    const held = await owners();
    expect(held.size).toBe(SCHEDULING_SHARDS);
    for (const pids of held.values()) expect(pids).toHaveLength(1);
    for (const r of [a, b, c]) for (const k of r.held) expect(held.get(k)).toEqual([r.pid]);
    expect([...(await shardHolders(db.pool)).values()].flat()).toHaveLength(SCHEDULING_SHARDS);

    // A replica released: the others take its shards at their next ticks.
    await c.release();
    for (let i = 0; i < 2; i++) for (const r of [a, b]) await r.sync();
    expect(a.held.size + b.held.size).toBe(SCHEDULING_SHARDS);

    // A replica whose session ends without a release (killed): its shards are free at once, and taken at the next tick.
    const killed = await db.pool.query<{ n: number }>(`SELECT count(pg_terminate_backend($1))::int AS n`, [b.pid]);
    expect(killed.rows[0]!.n).toBe(1);
    await expect.poll(async () => (await a.sync()).size, { interval: 20, timeout: scaled(10_000) }).toBe(SCHEDULING_SHARDS);
    expect(b.held.size).toBe(0);
    await a.release();
    await b.release();
  });

  it('keep a process that is not serve from deciding while a replica decides, and let it when none does', async () => {
    const a = shardLeases(db.pool);
    await a.sync();
    expect(await trySchedulingPass(db.pool, 'notified checks')).toBeNull();
    await a.release();
    const pass = await trySchedulingPass(db.pool, 'notified checks');
    expect(pass).not.toBeNull();
    // While the pass holds it, a replica decides nothing; once it ends, the replica takes its shards.
    const b = shardLeases(db.pool);
    expect((await b.sync()).size).toBe(0);
    await pass!.release();
    expect((await b.sync()).size).toBe(SCHEDULING_SHARDS);
    await b.release();
  });
});
