/**
 * Stream locks: at most one run of a source's stream at a time across every
 * pmsync process on one database (serve replicas, `pmsync sync` from cron,
 * `pmsync resync`).
 *
 * A lock is a PostgreSQL session advisory lock held on a connection of its own,
 * outside the pool, for the whole run. PostgreSQL releases it the moment that
 * connection ends, so a process that dies (even by SIGKILL) never leaves a
 * stale lock behind, and there is no lease to expire or renew. The connection's
 * application_name names the stream and the holder, so
 * `SELECT application_name FROM pg_stat_activity` shows who runs what.
 *
 * The lock connection must be a real session: behind PgBouncer in transaction
 * mode, point DATABASE_URL at PostgreSQL itself.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { PmsyncError } from '../errors.ts';
import type { Pool } from '../db/pool.ts';

/** First key of every stream lock (the two-integer advisory lock space). */
export const STREAM_LOCK_CLASS = 727_002;
const POLL_MS = 500;

/** Second key of a stream lock: 32 bits of a hash of "source/resource". */
export function streamLockKey(source: string, resource: string): number {
  return createHash('sha256').update(`${source}/${resource}`).digest().readInt32BE(0);
}

export function holderName(): string {
  return `${hostname()}:${process.pid}`;
}

export class LockedError extends PmsyncError {
  constructor(source: string, resource: string, waitedMs: number) {
    super(
      'LOCKED',
      `${source}/${resource} is being synced by another pmsync process${waitedMs > 0 ? ` and was still busy after ${Math.round(waitedMs / 1000)} s` : ''}; ` +
        'try again when its run ends (see "pmsync runs"), or wait longer with --wait SECONDS.',
      { retryable: true },
    );
    this.name = 'LockedError';
  }
}

export interface StreamLock {
  /** Aborted if the lock's connection is lost while the run goes on: the run must stop. */
  lost: AbortSignal;
  release(): Promise<void>;
}

export interface AcquireOptions {
  /** How long to wait for another holder; 0 tries once. */
  waitMs?: number;
  /** Stops waiting (e.g. shutdown). */
  signal?: AbortSignal;
  sleep?: (ms: number) => Promise<void>;
  /** The clock the wait is measured on, in epoch milliseconds; Date.now by default. */
  now?: () => number;
}

/** Takes the lock of one stream, or returns null when another process holds it past `waitMs`. */
export async function acquireStreamLock(
  pool: Pool,
  source: string,
  resource: string,
  options: AcquireOptions = {},
): Promise<StreamLock | null> {
  const client = new pg.Client({ ...pool.options, application_name: `pmsync lock ${source}/${resource} ${holderName()}`.slice(0, 63) });
  const lost = new AbortController();
  client.on('error', () =>
    lost.abort(new PmsyncError('DB_UNREACHABLE', `lost the database connection holding the lock of ${source}/${resource}`)),
  );
  await client.connect();
  const key = streamLockKey(source, resource);
  const sleep = options.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const now = options.now ?? Date.now;
  const deadline = now() + (options.waitMs ?? 0);
  try {
    for (;;) {
      const res = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [STREAM_LOCK_CLASS, key]);
      if (res.rows[0]?.ok) break;
      if (now() >= deadline || options.signal?.aborted) {
        await client.end();
        return null;
      }
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - now())));
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  client.on('end', () => lost.abort());
  let released = false;
  return {
    lost: lost.signal,
    async release() {
      if (released) return;
      released = true;
      // Ending the session releases the lock; an explicit unlock first keeps it short even if end() is slow.
      await client.query('SELECT pg_advisory_unlock($1, $2)', [STREAM_LOCK_CLASS, key]).catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/** The streams whose locks are held right now, with the holder's application_name. */
export async function heldStreamLocks(db: Pick<Pool, 'query'>): Promise<Array<{ key: number; holder: string | null; since: Date | null }>> {
  const res = await db.query<{ key: number; holder: string | null; since: Date | null }>(
    `SELECT l.objid::int AS key, a.application_name AS holder, a.backend_start AS since
     FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [STREAM_LOCK_CLASS],
  );
  return res.rows;
}

/** First key of the run slots of a source (see acquireSourceSlot). */
export const SOURCE_SLOT_CLASS = 727_003;
/** First key of run locks; the second is the stream's streamLockKey (see acquireSourceSlot). */
export const RUN_LOCK_CLASS = 727_005;

/** Second key of a source's run slot: 32 bits of a hash of "source#slot". */
export function sourceSlotKey(source: string, slot: number): number {
  return createHash('sha256').update(`${source}#${slot}`).digest().readInt32BE(0);
}

export interface SourceSlot {
  slot: number;
  release(): Promise<void>;
}

/**
 * Takes one of a source's `slots` run slots (session advisory locks on a
 * connection of its own, like stream locks) for a run of `resource`, or
 * returns null when every slot is held: at most `slots` runs of one source at
 * once across every process. The run queue's group limit alone is not exact:
 * pg-boss counts a group's running jobs in each fetch without serializing
 * fetches, so workers fetching at the same instant can all take jobs of the
 * same source.
 *
 * The slot's connection also holds the stream's run lock until the slot is
 * released: every process sees which streams have a job of the run queue
 * being worked (heldRunLocks), which pg-boss itself reports only in counts
 * refreshed every few seconds.
 */
export async function acquireSourceSlot(databaseUrl: string, source: string, resource: string, slots: number): Promise<SourceSlot | null> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: `pmsync slot ${source} ${holderName()}`.slice(0, 63) });
  client.on('error', () => undefined);
  await client.connect();
  try {
    for (let slot = 0; slot < slots; slot++) {
      const key = sourceSlotKey(source, slot);
      const res = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [SOURCE_SLOT_CLASS, key]);
      if (!res.rows[0]?.ok) continue;
      const run = streamLockKey(source, resource);
      // One job of a stream runs at a time (its queue allows one active job per stream): never contended.
      await client.query('SELECT pg_try_advisory_lock($1, $2)', [RUN_LOCK_CLASS, run]);
      let released = false;
      return {
        slot,
        async release() {
          if (released) return;
          released = true;
          await client
            .query('SELECT pg_advisory_unlock($1, $2), pg_advisory_unlock($3, $4)', [RUN_LOCK_CLASS, run, SOURCE_SLOT_CLASS, key])
            .catch(() => undefined);
          await client.end().catch(() => undefined);
        },
      };
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  await client.end();
  return null;
}

/** The streams (their streamLockKey) whose run locks are held right now, in any process. */
export async function heldRunLocks(db: Pick<Pool, 'query'>): Promise<Set<number>> {
  const res = await db.query<{ key: number }>(
    `SELECT l.objid::int AS key FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [RUN_LOCK_CLASS],
  );
  return new Set(res.rows.map((r) => r.key));
}

export type Locked<T> = { ran: true; value: T } | { ran: false };

/**
 * Runs `body` holding the stream's lock, with a context whose signal also
 * fires if the lock is lost; returns { ran: false } when another process holds
 * it past `waitMs`.
 */
export async function withStreamLock<T, C extends { pool: Pool; signal: AbortSignal }>(
  ctx: C,
  source: string,
  resource: string,
  options: AcquireOptions,
  body: (ctx: C) => Promise<T>,
): Promise<Locked<T>> {
  const lock = await acquireStreamLock(ctx.pool, source, resource, { signal: ctx.signal, ...options });
  if (!lock) return { ran: false };
  try {
    return { ran: true, value: await body({ ...ctx, signal: AbortSignal.any([ctx.signal, lock.lost]) }) };
  } finally {
    await lock.release();
  }
}

/** The scheduling lock: its own class, so it never meets a stream's. */
const SCHEDULER_LOCK_CLASS = 727_004;
const SCHEDULER_LOCK_KEY = 0;
/** application_name prefix of a serve replica's scheduling-lock connection. */
const SERVE_SCHEDULER_NAME = 'pmsync scheduler';

/**
 * Scheduling leadership: of the serve replicas on one database, the one holding
 * this lock decides the runs at each tick; the others only work the queue.
 * Deciding reads every source's state, so one decider keeps that cost flat as
 * replicas are added. The lock is a session advisory lock on a connection of
 * its own, like a stream lock: if its holder dies, PostgreSQL releases it at
 * once and the next replica to tick takes it over.
 */
export interface Leadership {
  /** True while this process holds the lock, taking it when it is free. */
  lead(): Promise<boolean>;
  release(): Promise<void>;
}

export function schedulingLeadership(pool: Pool): Leadership {
  let client: pg.Client | null = null;
  let released = false;
  const drop = () => {
    const c = client;
    client = null;
    void c?.end().catch(() => undefined);
  };
  return {
    async lead() {
      if (released) return false;
      if (client) return true;
      const c = new pg.Client({ ...pool.options, application_name: `${SERVE_SCHEDULER_NAME} ${holderName()}`.slice(0, 63) });
      c.on('error', () => {
        if (client === c) drop();
      });
      c.on('end', () => {
        if (client === c) client = null;
      });
      await c.connect();
      try {
        const res = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY]);
        if (!res.rows[0]?.ok || released) {
          await c.end();
          return false;
        }
      } catch (err) {
        await c.end().catch(() => undefined);
        throw err;
      }
      client = c;
      return true;
    },
    async release() {
      released = true;
      const c = client;
      client = null;
      if (!c) return;
      await c.query('SELECT pg_advisory_unlock($1, $2)', [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY]).catch(() => undefined);
      await c.end().catch(() => undefined);
    },
  };
}

/**
 * The scheduling lock for one pass of a process that is not serve (`pmsync
 * webhooks receive` checking notified streams): taken only when free, and
 * released by the caller at the end of its pass, so a serve replica that
 * starts later takes it at its next tick and keeps it. Null when it is held.
 */
export async function trySchedulingPass(pool: Pool, what: string): Promise<{ release(): Promise<void> } | null> {
  const client = new pg.Client({ ...pool.options, application_name: `pmsync ${what} ${holderName()}`.slice(0, 63) });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const res = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
      SCHEDULER_LOCK_CLASS,
      SCHEDULER_LOCK_KEY,
    ]);
    if (!res.rows[0]?.ok) {
      await client.end();
      return null;
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await client.query('SELECT pg_advisory_unlock($1, $2)', [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY]).catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/** Whether a serve replica holds the scheduling lock now (it decides every source's runs). */
export async function serveSchedules(db: Pick<Pool, 'query'>): Promise<boolean> {
  const res = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.application_name LIKE $3`,
    [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY, `${SERVE_SCHEDULER_NAME} %`],
  );
  return (res.rows[0]?.n ?? 0) > 0;
}
