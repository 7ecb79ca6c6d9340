/**
 * The run queue: every run the scheduler decides on (a check, a backfill, a
 * webhook-triggered check, a full refresh) is a pg-boss job in PostgreSQL
 * (schema "pgboss", reached through src/queue.ts), taken by whichever serve
 * replica has a free worker.
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
 *   with the dead replica's connection. A worker skips the run keys pg-boss
 *   lists as running, a list its supervision pass recomputes before it fails
 *   the silent jobs and each process caches for QUEUE_CACHE_SECONDS
 *   (src/queue.ts): the retry waits for the next pass and the next cache. So a
 *   killed replica's runs resume within heartbeatSeconds + 2 x
 *   SUPERVISE_SECONDS + QUEUE_CACHE_SECONDS + POLL_SECONDS (the retry delay
 *   passes within the second supervision interval): 54 s with the default
 *   heartbeat of 30 s.
 * - In flight: a stream's run is in flight while its job waits in the queue
 *   (pg-boss lists waiting jobs, whichever process sent them), is held by a
 *   worker of this process, or holds its run lock in any process: a worker
 *   takes the lock with its run slot, right after pg-boss hands it the job,
 *   and keeps it until the job ends (src/state/locks.ts). A dead replica's
 *   lock went with it, but its job stays active in pg-boss until the
 *   heartbeat fails it: such a job is in flight while pg-boss's monitor
 *   counted it active and its run recorded no end. pg-boss reports active
 *   jobs of other processes only as its monitor last counted them, a few
 *   seconds late, hence the locks.
 */
import type { Purpose } from '../api/http.ts';
import type { Queryable } from '../db/pool.ts';
import { jobQueueOf, type Job, type JobQueue } from '../queue.ts';
import { acquireSourceSlot, heldRunLocks, streamLockKey, type LockSession } from '../state/locks.ts';
import { unendedFires } from '../state/stream-schedule.ts';
import { derivedFrom } from './kept.ts';

export const RUN_QUEUE = 'pmsync-run';
/** How often pg-boss looks for jobs whose heartbeat stopped: the job queue supervises at least this often. */
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
  /**
   * Of `streams` (`source/resource`), those with a run waiting, retrying or running, in any process. What is derived
   * from `streams` is kept with it: a list passed again must not have been written into.
   */
  inFlight(db: Queryable, streams: Iterable<string>): Promise<Set<string>>;
  /** Resolves once no run is waiting, retrying or running in any process. */
  drained(db: Queryable, pollMs?: number): Promise<void>;
  /** Stops taking jobs here and waits for the running ones. */
  stopWork(): Promise<void>;
}

export interface DispatcherOptions {
  /** Where run slots are taken (src/state/locks.ts). */
  databaseUrl: string;
  /** The process's lock session: run slots are held on it rather than on a connection each. */
  locks?: LockSession;
  /** A running job's worker proves it is alive this often (pg-boss refreshes at half of it); at least 10. */
  heartbeatSeconds: number;
}

/** Makes sure the run queue exists on `queue` with these settings, and dispatches and works its jobs there. */
export async function openDispatcher(queue: JobQueue, o: DispatcherOptions): Promise<Dispatcher> {
  const options = {
    retryLimit: 1,
    retryDelay: RETRY_DELAY_SECONDS,
    expireInSeconds: EXPIRE_SECONDS,
    heartbeatSeconds: o.heartbeatSeconds,
    retentionSeconds: RETENTION_SECONDS,
  };
  await queue.ensure(RUN_QUEUE, { policy: 'stately', notify: true, ...options });

  return {
    async dispatch(job) {
      return (await queue.send(RUN_QUEUE, job, sendOptions(job))) !== null;
    },
    async work(concurrency, perSource, handler) {
      await queue.work<RunJob>(
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
          const slot = await acquireSourceSlot(o.databaseUrl, job.data.source, job.data.resource, perSource, o.locks);
          if (!slot) {
            // Taken past the source's limit: back to the queue (a stream may have one job waiting beside this active one).
            // pg-boss's group limit holds it there until one of the source's runs ends.
            await queue.send(RUN_QUEUE, job.data, sendOptions(job.data));
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
    inFlight: (db, streams) => inFlightOn(queue, db, streams),
    async drained(db, pollMs = 20) {
      while ((await seenOn(queue, db).then(any)) || queue.busy(RUN_QUEUE)) await new Promise((r) => setTimeout(r, pollMs));
    },
    async stopWork() {
      await queue.offWork(RUN_QUEUE);
    },
  };
}

/** Runs queued and not started yet (retries due included), and how long the oldest has waited, across replicas. */
export async function runQueueWait(db: Queryable): Promise<{ waiting: number; oldestWaitSeconds: number }> {
  const now = Date.now();
  const due = (await jobQueueOf(db).waiting<RunJob>(RUN_QUEUE)).map((j) => j.startAfter.getTime()).filter((t) => t <= now);
  const oldest = due.reduce((a, b) => Math.min(a, b), now);
  return { waiting: due.length, oldestWaitSeconds: (now - oldest) / 1000 };
}

/**
 * Runs in flight as seen from this process, read in the order a job moves on,
 * so that a job moving while it is read is still seen in one of its places:
 * - `keys`: streams whose job waits or retries (in any process), is held by a
 *   worker here, or was a dead process's: active when pg-boss's monitor last
 *   counted, and its run never recorded its end (pg-boss fails it once its
 *   heartbeat is old, and it waits for its retry);
 * - `locked`: the run locks held in any process (streamLockKey of the stream).
 */
async function seenOn(queue: JobQueue, db: Queryable): Promise<{ keys: Set<string>; locked: Set<number> }> {
  const keys = new Set((await queue.waiting<RunJob>(RUN_QUEUE)).map((j) => runKey(j.data)));
  for (const job of queue.held<RunJob>(RUN_QUEUE)) keys.add(runKey(job.data));
  const locked = await heldRunLocks(db);
  const counted = (await queue.monitored(RUN_QUEUE)).keys.filter((k) => !keys.has(k) && !locked.has(lockKeyOf(k)));
  for (const key of await unendedFires(db, counted)) keys.add(key);
  return { keys, locked };
}

const any = (seen: { keys: Set<string>; locked: Set<number> }) => seen.keys.size > 0 || seen.locked.size > 0;

async function inFlightOn(queue: JobQueue, db: Queryable, streams: Iterable<string>): Promise<Set<string>> {
  const { keys, locked } = await seenOn(queue, db);
  // The streams whose run lock is held: looked up from the locks held (a few) rather than by hashing every stream.
  const byLock = lockIndex(streams);
  for (const lock of locked) for (const key of byLock.get(lock) ?? []) keys.add(key);
  return keys;
}

/**
 * The streams of `streams` by their run lock key, kept with the list: the decider asks with its replica's every stream
 * at every tick (the same array until its shards change), and hashing each (SHA-256) cost about 140 ms a tick at
 * 50,000 streams, more than deciding them.
 */
const lockIndexes = new WeakMap<Iterable<string>, Map<number, string[]>>();
function lockIndex(streams: Iterable<string>): Map<number, string[]> {
  return derivedFrom(lockIndexes, streams, (keys) => {
    const index = new Map<number, string[]>();
    for (const key of keys) {
      const lock = lockKeyOf(key);
      const list = index.get(lock);
      if (list) list.push(key);
      else index.set(lock, [key]);
    }
    return index;
  });
}

/** Of `streams` (`source/resource`), those with a run waiting, retrying or running, in any process. */
export async function runsInFlight(db: Queryable, streams: Iterable<string>): Promise<Set<string>> {
  return inFlightOn(jobQueueOf(db), db, streams);
}

/**
 * True while a run waits, retries or runs in any process, as far as the
 * database shows: the process whose worker holds a job also knows it from
 * pg-boss's fetch until pg-boss records its end (JobQueue.busy).
 */
export async function anyRunInFlight(db: Queryable): Promise<boolean> {
  return any(await seenOn(jobQueueOf(db), db));
}

/** A stream's run lock key: streamLockKey of `source/resource` (it hashes the two joined by "/"). */
function lockKeyOf(key: string): number {
  const slash = key.indexOf('/');
  return streamLockKey(key.slice(0, slash), key.slice(slash + 1));
}
