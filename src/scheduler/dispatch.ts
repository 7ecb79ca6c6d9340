/**
 * The run queue: every run the scheduler decides on (a check, a backfill, a
 * webhook-triggered check, a full refresh) is a pg-boss job in PostgreSQL
 * (schema "pgboss"), taken by whichever serve replica has a free worker.
 *
 * - One stream, one run: jobs carry the stream as their singleton key on a
 *   "stately" queue, so a stream has at most one job waiting and one running,
 *   across replicas. The scheduler's claim (src/state/stream-schedule.ts)
 *   already makes a second dispatch rare; the queue makes it impossible.
 * - One source cannot take every worker: jobs are grouped by source and at
 *   most `perSource` of a group run at once, across replicas. pg-boss's group
 *   limit keeps the others in the queue, but workers fetching at the same
 *   instant can overshoot it, so a taken job also takes one of its source's
 *   run slots (src/state/locks.ts); with none free it goes back to the queue
 *   at once, unrun. A slow or hanging source thus holds at most `perSource`
 *   workers of the whole fleet, and every other source's runs go on.
 * - Checks before backfills: a job's pg-boss priority comes from its purpose
 *   (RUN_PRIORITY: webhook-triggered checks, then checks, then full
 *   refreshes, then backfills; higher is taken first, equal ones oldest
 *   first). When workers are scarce, a practice's multi-day backfill waits
 *   behind every other practice's waiting checks instead of ahead of them.
 *   Priority only orders what a free worker takes next: the singleton key and
 *   the group limit are filters applied before the ordering (pg-boss's fetch
 *   skips jobs of a group at its limit instead of stopping at them), so a
 *   source at its limit never blocks another's jobs, whatever their priority,
 *   and a running backfill is never interrupted. Backfills are not starved
 *   for good: checks are bounded by the daily budget, so workers fall idle.
 * - A replica that dies mid-run stops sending its heartbeat; pg-boss fails the
 *   job once the heartbeat is `heartbeatSeconds` old (its supervisor looks every
 *   SUPERVISE_SECONDS) and retries it once after RETRY_DELAY_SECONDS, on any
 *   replica, where the run resumes from its checkpoint. The stream's lock went
 *   with the dead replica's connection. So a killed replica's runs resume
 *   within heartbeatSeconds + SUPERVISE_SECONDS + RETRY_DELAY_SECONDS +
 *   POLL_SECONDS: 47 s with the default heartbeat of 30 s.
 */
import { PgBoss, type Job } from 'pg-boss';
import type { Purpose } from '../api/http.ts';
import { PGBOSS_SCHEMA } from '../db/pgboss.ts';
import type { Queryable } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import { acquireSourceSlot } from '../state/locks.ts';

export const RUN_QUEUE = 'pmsync-run';
/** How often pg-boss looks for jobs whose heartbeat stopped. */
export const SUPERVISE_SECONDS = 10;
/** A job failed by a lost heartbeat (or a crash of its handler) is retried after this. */
export const RETRY_DELAY_SECONDS = 5;
/** How often an idle worker looks for jobs when no notification woke it. */
export const POLL_SECONDS = 2;
/** Longest a run may take; pg-boss allows at most a day. Backfills stop at their quota long before. */
const EXPIRE_SECONDS = 12 * 3600;
/** Finished jobs are kept this long, for inspection. */
const RETENTION_SECONDS = 2 * 86_400;

export interface RunJob {
  source: string;
  resource: string;
  purpose: Purpose;
  /** Why it was dispatched: changes, notified, floor, cron, backfill, ... */
  reason: string;
  /** The claim this run belongs to (stream_schedule.last_fire_at), ISO. */
  firedAt: string;
  /** The window must reach this instant (a notified change), ISO. */
  mustInclude?: string;
  /** notified_until before this run's claim, handed back if the run fails. */
  notifiedBefore?: string | null;
}

/**
 * pg-boss priority by purpose. A notified change is known to be waiting and
 * has the tightest bound (notifiedWithinMinutes); a check keeps a caught-up
 * stream fresh for a few requests; a full refresh re-reads a small table; a
 * backfill reads history that can wait minutes more without harm.
 */
export const RUN_PRIORITY: Record<Purpose, number> = { webhook: 3, check: 2, resync: 2, full: 1, backfill: 0 };

function sendOptions(job: RunJob) {
  return { singletonKey: runKey(job), group: { id: job.source }, priority: RUN_PRIORITY[job.purpose] };
}

export function runKey(job: Pick<RunJob, 'source' | 'resource'>): string {
  return `${job.source}/${job.resource}`;
}

export type RunHandler = (job: RunJob) => Promise<void>;

export interface Dispatcher {
  /** Queues a run; false when the stream already has one waiting. */
  dispatch(job: RunJob): Promise<boolean>;
  /** Runs `handler` on up to `concurrency` jobs at once in this process. */
  work(concurrency: number, perSource: number, handler: RunHandler): Promise<void>;
  /** Streams (`source/resource`) with a run waiting, retrying or running, in any process. */
  inFlight(db: Queryable): Promise<Set<string>>;
  /** Resolves once no run is waiting, retrying or running in any process. */
  drained(db: Queryable, pollMs?: number): Promise<void>;
  /** Stops taking jobs here and waits for the running ones. */
  stopWork(): Promise<void>;
  stop(): Promise<void>;
}

export interface DispatcherOptions {
  /** A running job's worker proves it is alive this often (pg-boss refreshes at half of it); at least 10. */
  heartbeatSeconds: number;
}

export async function openDispatcher(databaseUrl: string, logger: Logger, o: DispatcherOptions): Promise<Dispatcher> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    schema: PGBOSS_SCHEMA,
    application_name: 'pmsync-runs',
    max: 4,
    schedule: false,
    superviseIntervalSeconds: SUPERVISE_SECONDS,
    monitorIntervalSeconds: SUPERVISE_SECONDS,
    useListenNotify: true,
  });
  boss.on('error', (err: Error) => logger.warn({ err }, 'run queue: database error (pg-boss retries on its own)'));
  await boss.start();
  const options = {
    retryLimit: 1,
    retryDelay: RETRY_DELAY_SECONDS,
    expireInSeconds: EXPIRE_SECONDS,
    heartbeatSeconds: o.heartbeatSeconds,
    retentionSeconds: RETENTION_SECONDS,
  };
  await boss.createQueue(RUN_QUEUE, { policy: 'stately', notify: true, ...options });
  await boss.updateQueue(RUN_QUEUE, options);

  return {
    async dispatch(job) {
      return (await boss.send(RUN_QUEUE, job, sendOptions(job))) !== null;
    },
    async work(concurrency, perSource, handler) {
      await boss.work<RunJob>(
        RUN_QUEUE,
        {
          localConcurrency: concurrency,
          groupConcurrency: perSource,
          pollingIntervalSeconds: POLL_SECONDS,
          notifyPollingIntervalSeconds: POLL_SECONDS,
          // A worker otherwise waits POLL_SECONDS after every job, even with a backlog: with many
          // sources that caps a replica at concurrency / POLL_SECONDS runs a second.
          burstWhenReadyExceeds: 1,
        },
        async ([job]: Job<RunJob>[]) => {
          if (!job) return;
          const slot = await acquireSourceSlot(databaseUrl, job.data.source, perSource);
          if (!slot) {
            // Taken past the source's limit: back to the queue (a stream may have one job waiting beside this active one).
            // pg-boss's group limit holds it there until one of the source's runs ends.
            await boss.send(RUN_QUEUE, job.data, sendOptions(job.data));
            return;
          }
          try {
            await handler(job.data);
          } finally {
            await slot.release();
          }
        },
      );
    },
    inFlight: runsInFlight,
    async drained(db, pollMs = 20) {
      for (;;) {
        if ((await runsInFlight(db)).size === 0) return;
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
    async stopWork() {
      await boss.offWork(RUN_QUEUE, { wait: true });
    },
    async stop() {
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
}

/** Runs queued and not started yet (retries due included), and how long the oldest has waited, across replicas. */
export async function runQueueWait(db: Queryable): Promise<{ waiting: number; oldestWaitSeconds: number }> {
  const exists = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${PGBOSS_SCHEMA}.job`]);
  if (!exists.rows[0]?.t) return { waiting: 0, oldestWaitSeconds: 0 };
  const res = await db.query<{ waiting: number; oldest: number | null }>(
    `SELECT count(*)::int AS waiting, extract(epoch FROM now() - min(start_after))::float8 AS oldest
     FROM ${PGBOSS_SCHEMA}.job WHERE name = $1 AND state IN ('created', 'retry') AND start_after <= now()`,
    [RUN_QUEUE],
  );
  return { waiting: res.rows[0]?.waiting ?? 0, oldestWaitSeconds: Math.max(0, res.rows[0]?.oldest ?? 0) };
}

/** Streams (`source/resource`) with a run waiting, retrying or running, in any process; empty before any queue existed. */
export async function runsInFlight(db: Queryable): Promise<Set<string>> {
  const exists = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${PGBOSS_SCHEMA}.job`]);
  if (!exists.rows[0]?.t) return new Set();
  const res = await db.query<{ key: string }>(
    `SELECT DISTINCT singleton_key AS key FROM ${PGBOSS_SCHEMA}.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
    [RUN_QUEUE],
  );
  return new Set(res.rows.map((r) => r.key));
}
