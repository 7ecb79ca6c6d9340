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
import { isConnectionError, type Pool } from '../db/pool.ts';

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
  /** Hold it on this process's lock session instead of a connection of its own. */
  session?: LockSession;
}

/**
 * One connection holding many session advisory locks: a serve replica's runs
 * hold their stream locks, run slots and run locks on it, so its connections
 * do not grow with `schedules.concurrency` (docs/scaling.md). PostgreSQL lets a
 * session take a lock it holds again, so the session refuses a lock it holds
 * already: within the process, as across processes, one holder at a time.
 * Statements on it run one after the other. If the connection is lost, every
 * lock on it is gone: `lost` of each lock taken on it fires, and the next lock
 * taken opens a new connection.
 */
export class LockSession {
  private readonly options: pg.ClientConfig;
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private lostController = new AbortController();
  private readonly held = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(pool: Pool, holder = holderName()) {
    this.options = { ...pool.options, application_name: `${LOCK_SESSION_NAME} ${holder}`.slice(0, 63) };
  }

  /** Fires when the connection holding the locks taken so far is lost. */
  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const c = new pg.Client(this.options);
      const drop = () => {
        if (this.client !== c) return;
        this.client = null;
        this.held.clear();
        this.lostController.abort(new PmsyncError('DB_UNREACHABLE', 'lost the database connection holding the run locks of this process'));
        this.lostController = new AbortController();
        void c.end().catch(() => undefined);
      };
      c.on('error', drop);
      c.on('end', drop);
      try {
        await c.connect();
      } catch (err) {
        await c.end().catch(() => undefined);
        throw err;
      }
      this.client = c;
      return c;
    })().finally(() => (this.connecting = null));
    return this.connecting;
  }

  /** Runs `fn` after the statements before it. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Takes lock (lockClass, key) if no one holds it, this process included; with the signal that fires if it is lost. */
  tryLock(lockClass: number, key: number): Promise<AbortSignal | null> {
    return this.serial(async () => {
      if (this.closed) return null;
      const id = `${lockClass}:${key}`;
      if (this.held.has(id)) return null;
      const c = await this.connection();
      const lost = this.lostController.signal;
      const res = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [lockClass, key]);
      if (!res.rows[0]?.ok) return null;
      this.held.add(id);
      return lost;
    });
  }

  unlock(lockClass: number, key: number): Promise<void> {
    return this.serial(async () => {
      const id = `${lockClass}:${key}`;
      if (!this.held.delete(id) || !this.client) return;
      await this.client.query('SELECT pg_advisory_unlock($1, $2)', [lockClass, key]).catch(() => undefined);
    });
  }

  /** Ends the connection, and with it every lock still held. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    const c = this.client;
    this.client = null;
    this.held.clear();
    await c?.end().catch(() => undefined);
  }
}

/** application_name prefix of a process's lock session. */
const LOCK_SESSION_NAME = 'pmsync locks';

/** Takes the lock of one stream, or returns null when another process holds it past `waitMs`. */
export async function acquireStreamLock(
  pool: Pool,
  source: string,
  resource: string,
  options: AcquireOptions = {},
): Promise<StreamLock | null> {
  if (options.session) return acquireOnSession(options.session, source, resource, options);
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

async function acquireOnSession(
  session: LockSession,
  source: string,
  resource: string,
  options: AcquireOptions,
): Promise<StreamLock | null> {
  const key = streamLockKey(source, resource);
  const sleep = options.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const now = options.now ?? Date.now;
  const deadline = now() + (options.waitMs ?? 0);
  for (;;) {
    const lost = await session.tryLock(STREAM_LOCK_CLASS, key);
    if (lost) {
      let released = false;
      return {
        lost,
        async release() {
          if (released) return;
          released = true;
          await session.unlock(STREAM_LOCK_CLASS, key);
        },
      };
    }
    if (now() >= deadline || options.signal?.aborted) return null;
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - now())));
  }
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
export async function acquireSourceSlot(
  databaseUrl: string,
  source: string,
  resource: string,
  slots: number,
  session?: LockSession,
): Promise<SourceSlot | null> {
  if (session) {
    for (let slot = 0; slot < slots; slot++) {
      const key = sourceSlotKey(source, slot);
      if (!(await session.tryLock(SOURCE_SLOT_CLASS, key))) continue;
      const run = streamLockKey(source, resource);
      // One job of a stream runs at a time (its queue allows one active job per stream): never contended.
      await session.tryLock(RUN_LOCK_CLASS, run);
      let released = false;
      return {
        slot,
        async release() {
          if (released) return;
          released = true;
          await session.unlock(RUN_LOCK_CLASS, run);
          await session.unlock(SOURCE_SLOT_CLASS, key);
        },
      };
    }
    return null;
  }
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
export async function withStreamLock<T, C extends { pool: Pool; signal: AbortSignal; locks?: LockSession }>(
  ctx: C,
  source: string,
  resource: string,
  options: AcquireOptions,
  body: (ctx: C) => Promise<T>,
): Promise<Locked<T>> {
  const lock = await acquireStreamLock(ctx.pool, source, resource, { signal: ctx.signal, session: ctx.locks, ...options });
  if (!lock) return { ran: false };
  try {
    return { ran: true, value: await body({ ...ctx, signal: AbortSignal.any([ctx.signal, lock.lost]) }) };
  } finally {
    await lock.release();
  }
}

/**
 * The scheduling lock: its own class, so it never meets a stream's. Every serve
 * replica holds it shared while it decides shards (below); a process that is
 * not serve (`pmsync webhooks receive` checking notified streams) takes it
 * exclusively for one pass, and only when no serve replica holds it.
 */
const SCHEDULER_LOCK_CLASS = 727_004;
const SCHEDULER_LOCK_KEY = 0;
/** First key of the scheduling shards' locks; the second is the shard's number. */
export const SHARD_LOCK_CLASS = 727_006;
/** application_name prefix of a serve replica's shard connection. */
const SERVE_SHARDS_NAME = 'pmsync shards';

/**
 * Sources are split into this many scheduling shards, each decided by one serve
 * replica at a time. Many more than replicas, so that they share them evenly;
 * few enough that taking them is a handful of statements.
 */
export const SCHEDULING_SHARDS = 64;

/** The shard a source is decided in: a hash of its name, so it never moves while the shard count stays. */
export function shardOf(source: string, shards = SCHEDULING_SHARDS): number {
  return createHash('sha256').update(source).digest().readUInt32BE(0) % shards;
}

/**
 * The scheduling shards this serve replica decides. Each is a session advisory
 * lock on one connection of the replica's own (besides the pool), held with the
 * scheduling lock shared. At every tick, sync() counts the replicas (the
 * sessions holding the scheduling lock shared), gives back the shards beyond its
 * share (the shard count over the replicas, rounded up) and takes free ones up
 * to it, so a new replica gets its share within a tick of the others'. If a
 * replica dies, PostgreSQL releases its locks with its connection, and the
 * others take its shards at their next tick. A lost connection loses every
 * shard at once: `held` is empty until the next sync takes them again.
 */
export interface ShardLeases {
  /** Gives back and takes shards toward this replica's share; the shards held now. */
  sync(): Promise<ReadonlySet<number>>;
  /** The shards held since the last sync (empty once the connection is lost). */
  readonly held: ReadonlySet<number>;
  /** The backend of the connection that holds them: dispatches are fenced on it (stream-schedule.ts, claimDispatch). */
  readonly pid: number | null;
  release(): Promise<void>;
}

export function shardLeases(pool: Pool, shards = SCHEDULING_SHARDS, holder = holderName()): ShardLeases {
  let client: pg.Client | null = null;
  let pid: number | null = null;
  const held = new Set<number>();
  let released = false;
  // Where this replica starts looking for free shards: replicas starting together try different ones first.
  const offset = createHash('sha256').update(holder).digest().readUInt32BE(0) % shards;
  const lose = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    pid = null;
    held.clear();
    void c.end().catch(() => undefined);
  };
  const connect = async (): Promise<pg.Client | null> => {
    const c = new pg.Client({ ...pool.options, application_name: `${SERVE_SHARDS_NAME} ${holder}`.slice(0, 63) });
    c.on('error', () => lose(c));
    c.on('end', () => lose(c));
    await c.connect();
    try {
      // Shared with the other replicas; refused only while a receiver's pass holds it alone (a moment).
      const res = await c.query<{ ok: boolean; pid: number }>('SELECT pg_try_advisory_lock_shared($1, $2) AS ok, pg_backend_pid() AS pid', [
        SCHEDULER_LOCK_CLASS,
        SCHEDULER_LOCK_KEY,
      ]);
      if (!res.rows[0]?.ok || released) {
        await c.end();
        return null;
      }
      client = c;
      pid = res.rows[0].pid;
      return c;
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
  };
  return {
    get held() {
      return held;
    },
    get pid() {
      return pid;
    },
    async sync() {
      if (released) return held;
      let c: pg.Client | null;
      try {
        c = client ?? (await connect());
      } catch (err) {
        if (isConnectionError(err)) return held;
        throw err;
      }
      if (!c) return held;
      try {
        const live = await c.query<{ n: number }>(
          `SELECT count(DISTINCT l.pid)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.application_name LIKE $3`,
          [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY, `${SERVE_SHARDS_NAME} %`],
        );
        const share = Math.ceil(shards / Math.max(1, live.rows[0]?.n ?? 1));
        if (held.size > share) {
          const extra = [...held].sort((a, b) => b - a).slice(0, held.size - share);
          await c.query('SELECT pg_advisory_unlock($1, k) FROM unnest($2::int[]) AS k', [SHARD_LOCK_CLASS, extra]);
          for (const k of extra) held.delete(k);
        } else if (held.size < share) {
          // Rows are taken in order and the filter stops at the LIMIT: only the shards returned are locked. The CASE
          // keeps the lock from being tried on a shard this session holds already (it would take it a second time).
          const res = await c.query<{ k: number }>(
            `SELECT k FROM (SELECT (g + $3::int) % $2::int AS k FROM generate_series(0, $2::int - 1) AS g) s
             WHERE CASE WHEN k = ANY($4::int[]) THEN false ELSE pg_try_advisory_lock($1, k) END LIMIT $5`,
            [SHARD_LOCK_CLASS, shards, offset, [...held], share - held.size],
          );
          for (const r of res.rows) held.add(r.k);
        }
      } catch (err) {
        lose(c);
        // A connection lost mid-sync holds nothing now: the next tick connects again.
        if (isConnectionError(err)) return held;
        throw err;
      }
      return held;
    },
    async release() {
      released = true;
      const c = client;
      client = null;
      pid = null;
      held.clear();
      if (!c) return;
      // Ending the session releases every lock it holds.
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

/** Whether a serve replica decides now: one holds the scheduling lock shared, with its shards. */
export async function serveSchedules(db: Pick<Pool, 'query'>): Promise<boolean> {
  const res = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.application_name LIKE $3`,
    [SCHEDULER_LOCK_CLASS, SCHEDULER_LOCK_KEY, `${SERVE_SHARDS_NAME} %`],
  );
  return (res.rows[0]?.n ?? 0) > 0;
}

/** The shards each serve replica decides now: holder (host:pid) -> shards. */
export async function shardHolders(db: Pick<Pool, 'query'>): Promise<Map<string, number[]>> {
  const res = await db.query<{ holder: string; shards: number[] }>(
    `SELECT a.application_name AS holder, array_agg(l.objid::int ORDER BY l.objid) AS shards
     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objsubid = 2
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     GROUP BY a.application_name`,
    [SHARD_LOCK_CLASS],
  );
  return new Map(res.rows.map((r) => [r.holder.replace(`${SERVE_SHARDS_NAME} `, ''), r.shards]));
}
