/**
 * The job queue: the one pg-boss instance of a pmsync process, holding every
 * queue pmsync has: the run queue (src/scheduler/dispatch.ts) and the webhook
 * refresh queue with its dead letters (src/webhooks/queue.ts). Those modules
 * say what a job is and how it is handled; this one starts and stops
 * pg-boss, creates queues, sends and works jobs, and says what is waiting and
 * what is being worked. It is the only module that imports pg-boss, and it
 * goes through pg-boss's public API alone: the tables in schema "pgboss" are
 * pg-boss's own and change between its versions.
 *
 * Glossary:
 * - waiting: a job not started yet (created) or waiting for its next attempt
 *   (retry). pg-boss lists them exactly, whichever process sent them
 *   (findJobs), with the instant each may start.
 * - held: a job a worker of this process has taken and not finished. pg-boss
 *   reports active jobs only as its monitor last counted them (every
 *   supervise interval), so this module keeps the held jobs itself, for every
 *   queue open on the same database in this process (a test may run several
 *   replicas in one process). What other processes hold now is the caller's
 *   to learn (src/scheduler/dispatch.ts reads run locks).
 * - dead letters: jobs that used every attempt, waiting in a queue of their
 *   own; counted by pg-boss's redrive preview, which counts exactly those.
 *
 * A process opens one queue per App (`pmsync serve` for its run worker and
 * its webhook side together); readers handed the App's pool find it
 * (jobQueueOf). `pmsync status` and the dead-letter listing open one that
 * only reads, over the App's pool: it installs nothing and opens no
 * connection of its own.
 */
import { PgBoss, type Job, type JobResult, type JobWithMetadata, type Queue, type SendOptions, type WorkOptions } from 'pg-boss';
import type { Queryable } from './db/pool.ts';
import type { Logger } from './log.ts';

export type { Job, JobResult, JobWithMetadata };

export const PGBOSS_SCHEMA = 'pgboss';
/** The name pg-boss's connections show in pg_stat_activity. */
export const QUEUE_APPLICATION_NAME = 'pmsync-queue';

export type QueueSettings = Omit<Queue, 'name'>;

export type JobHandler<T> = (jobs: Job<T>[]) => Promise<JobResult[] | void>;

export interface JobQueue {
  /** Creates the queue, or applies these settings to it as it exists (its policy is fixed at creation). */
  ensure(name: string, settings: QueueSettings): Promise<void>;
  /** The job's id; null when the queue's policy refused it (a waiting job with the same singleton key). */
  send(name: string, data: object, options?: Omit<SendOptions, 'db'> & { db?: Queryable }): Promise<string | null>;
  /** Runs `handler` on the queue's jobs in this process until offWork; resolves once the workers poll. */
  work<T>(name: string, options: WorkOptions, handler: JobHandler<T>): Promise<void>;
  /** Stops this process's workers of the queue after their current jobs. */
  offWork(name: string): Promise<void>;
  /** Moves every dead letter of `deadLetterQueue` back to the queue it failed on; returns how many. */
  redrive(deadLetterQueue: string): Promise<number>;
  /** The jobs waiting in the queue, in any process; none before the queue exists. */
  waiting<T>(name: string): Promise<JobWithMetadata<T>[]>;
  /** How many dead letters wait in `deadLetterQueue`, in any process. */
  deadLetterCount(deadLetterQueue: string): Promise<number>;
  /** The jobs of the queue the workers of this process hold now. */
  held<T>(name: string): Job<T>[];
  /** True while a worker of this process holds a job of the queue, up to pg-boss's record of its end. */
  busy(name: string): boolean;
  /** True when a worker of this process works the queue. */
  worked(name: string): boolean;
  /**
   * Active jobs of the queue, in any process, as pg-boss's monitor last
   * counted them: every supervise interval while a working queue runs, so
   * they may be a few seconds old. `keys` are their singleton keys (on
   * queues whose policy limits active jobs per key).
   */
  monitored(name: string): Promise<{ active: number; keys: string[] }>;
  stop(): Promise<void>;
}

/** What a queue is opened for: an App (src/app.ts) has these. */
export interface QueueHost {
  databaseUrl: string;
  /** The App's pool: readers handed it find this queue; a reading queue runs its queries on it. */
  pool: Queryable;
  logger: Logger;
}

/** How often each process re-reads pg-boss's queue cache (counts, and the singleton keys running). */
export const QUEUE_CACHE_SECONDS = 2;

export interface WorkingQueueOptions {
  mode: 'work';
  /** How often pg-boss fails expired jobs and jobs whose heartbeat stopped, and counts each queue. */
  superviseSeconds: number;
  /** Connections pg-boss's pool may open (its LISTEN session aside). */
  connections: number;
}

export type JobQueueOptions = WorkingQueueOptions | { mode: 'read' };

interface Opened {
  databaseUrl: string;
  boss: PgBoss;
  held: Map<string, Map<string, Job<unknown>>>;
}

/** The queue opened for each App pool. */
const byPool = new WeakMap<object, JobQueue>();
/** Every queue open in this process, for what their workers hold. */
const open = new Set<Opened>();

/** The queue opened for the App whose pool this is. */
export function jobQueueOf(pool: Queryable): JobQueue {
  const queue = byPool.get(pool);
  if (!queue) throw new Error('no job queue is open for this database pool: open one with openJobQueue first');
  return queue;
}

function adapter(db: Queryable) {
  return { executeSql: (text: string, values?: unknown[]) => db.query(text, values) };
}

/**
 * Opens the App's queue. To work, pg-boss connects on its own, installs or
 * migrates its schema when needed and supervises; to read, it runs on the
 * App's pool, and finds nothing when its schema was never installed (or is
 * another version's, until serve migrates it).
 */
export async function openJobQueue(host: QueueHost, options: JobQueueOptions): Promise<JobQueue> {
  if (byPool.has(host.pool)) throw new Error('a job queue is already open for this App');
  const working = options.mode === 'work';
  const boss = working
    ? new PgBoss({
        connectionString: host.databaseUrl,
        schema: PGBOSS_SCHEMA,
        application_name: QUEUE_APPLICATION_NAME,
        max: options.connections,
        schedule: false,
        // Expired and silent jobs are found by the supervise pass, counts by the monitor: both as often.
        superviseIntervalSeconds: options.superviseSeconds,
        monitorIntervalSeconds: options.superviseSeconds,
        // A worker's fetch skips the keys this cache lists as running (the run queue is `stately`), so a run
        // retried after its replica died waits for the cache to forget it: at pg-boss's 60 s by default, the
        // restart took 42-90 s instead of under a minute (bench/RESULTS.md, "Where the restart's time goes").
        queueCacheIntervalSeconds: QUEUE_CACHE_SECONDS,
        useListenNotify: true,
      })
    : new PgBoss({ db: adapter(host.pool), schema: PGBOSS_SCHEMA, migrate: false, supervise: false, schedule: false });
  boss.on('error', (err: Error) => host.logger.warn({ err }, 'job queue: database error (pg-boss retries on its own)'));
  boss.on('warning', (w: { message?: string }) => host.logger.warn({ warning: w.message }, 'job queue warning'));
  // A reading queue over a database pg-boss never ran on finds nothing, and installs nothing.
  let installed = working || (await boss.isInstalled());
  if (working) await boss.start();
  else if (installed) {
    try {
      await boss.start();
    } catch (err) {
      // Its schema is from another pg-boss version until a working queue (serve) migrates it: nothing is read from it.
      host.logger.warn({ err }, 'job queue: pg-boss schema not readable by this version yet; queue figures are left at zero');
      installed = false;
    }
  }
  const self: Opened = { databaseUrl: host.databaseUrl, boss, held: new Map() };
  open.add(self);

  // Queues known to exist: pg-boss refuses to list the jobs of a queue it does not know.
  const known = new Set<string>();
  const exists = async (name: string) => {
    if (!installed) return false;
    if (!known.has(name) && (await boss.getQueue(name))) known.add(name);
    return known.has(name);
  };
  const sameDatabase = () => [...open].filter((o) => o.databaseUrl === self.databaseUrl);

  const queue: JobQueue = {
    async ensure(name, settings) {
      await boss.createQueue(name, settings);
      // createQueue leaves an existing queue as it was: apply changed settings.
      const { policy: _policy, partition: _partition, ...changeable } = settings;
      if (Object.keys(changeable).length > 0) await boss.updateQueue(name, changeable);
      known.add(name);
    },
    async send(name, data, sendOptions = {}) {
      const { db, ...rest } = sendOptions;
      return boss.send(name, data, db ? { ...rest, db: adapter(db) } : rest);
    },
    async work<T>(name: string, workOptions: WorkOptions, handler: JobHandler<T>) {
      await boss.work<T>(name, workOptions, (async (jobs: Job<T>[]) => {
        const held = self.held.get(name) ?? new Map<string, Job<unknown>>();
        self.held.set(name, held);
        for (const job of jobs) held.set(job.id, job);
        try {
          return await handler(jobs);
        } finally {
          for (const job of jobs) held.delete(job.id);
        }
      }) as never);
    },
    async offWork(name) {
      await boss.offWork(name, { wait: true });
    },
    async redrive(deadLetterQueue) {
      let moved = 0;
      for (;;) {
        const n = await boss.redrive(deadLetterQueue, { limit: 1000 });
        moved += n;
        if (n < 1000) return moved;
      }
    },
    async waiting<T>(name: string) {
      if (!(await exists(name))) return [];
      return boss.findJobs<T>(name, { queued: true });
    },
    async deadLetterCount(deadLetterQueue) {
      if (!(await exists(deadLetterQueue))) return 0;
      return (await boss.previewRedrive(deadLetterQueue)).total;
    },
    held<T>(name: string) {
      return sameDatabase().flatMap((o) => [...(o.held.get(name)?.values() ?? [])]) as Job<T>[];
    },
    busy(name) {
      return sameDatabase().some(
        (o) => (o.held.get(name)?.size ?? 0) > 0 || o.boss.getWipData().some((w) => w.name === name && w.count > 0),
      );
    },
    worked(name) {
      return sameDatabase().some((o) => o.boss.getWipData().some((w) => w.name === name));
    },
    async monitored(name) {
      const q = installed ? await boss.getQueue(name) : null;
      return { active: q?.activeCount ?? 0, keys: q?.singletonsActive ?? [] };
    },
    async stop() {
      open.delete(self);
      byPool.delete(host.pool);
      if (installed) await boss.stop(working ? { graceful: true, timeout: 10_000 } : { graceful: false });
    },
  };
  byPool.set(host.pool, queue);
  return queue;
}

/** Runs `read` with a reading queue open for the App (status, listings), and stops it after. */
export async function whileReading<T>(host: QueueHost, read: () => Promise<T>): Promise<T> {
  const queue = await openJobQueue(host, { mode: 'read' });
  try {
    return await read();
  } finally {
    await queue.stop();
  }
}
