/**
 * The refresh queue: a pg-boss queue in PostgreSQL (schema "pgboss", reached
 * through src/queue.ts), shared by every replica. pg-boss claims jobs with
 * SKIP LOCKED, retries failures
 * with exponential backoff, expires the claims of workers that died, and moves
 * jobs that used every attempt to a dead-letter queue.
 *
 * Coalescing. Each job's singleton key is source:resource:id and the queue's
 * policy is "short": at most ONE waiting (created) job per key, any number
 * running. So:
 * - an event for a record whose refresh is still waiting adds nothing: the
 *   waiting job has not sent its request yet, and when it does it reads the
 *   record as it is after the event;
 * - an event for a record whose refresh has already started queues one more
 *   refresh: the running request may have read the record before the change.
 * The check is PostgreSQL's unique index on waiting jobs: an insert racing the
 * claim of the waiting job waits for the claim to commit or roll back, so it
 * never coalesces into a job that has already started.
 */
import type { Queryable } from '../db/pool.ts';
import { jobQueueOf, type Job, type JobQueue, type JobResult } from '../queue.ts';
import type { WebhookSettings } from '../config/webhooks.ts';

export const REFRESH_QUEUE = 'pmsync-refresh';
export const DEAD_LETTER_QUEUE = 'pmsync-refresh-dead';
/** Dead-lettered refreshes are kept this long for inspection and redrive. */
const DEAD_LETTER_RETENTION_SECONDS = 30 * 86_400;
/** Jobs one worker takes per fetch. */
const WORKER_BATCH = 2;
/** Retries and jobs held back until a quota reset are noticed this soon after they are due. */
const POLL_SECONDS = 2;
/** Longest pause between two retries. */
const RETRY_DELAY_MAX_SECONDS = 3600;

export interface RefreshJobData {
  source: string;
  resource: string;
  id: string;
}

export function singletonKey(job: RefreshJobData): string {
  return `${job.source}:${job.resource}:${job.id}`;
}

export interface EnqueueOptions {
  /** Run the insert in the caller's transaction, so the job exists exactly when the caller's rows do. */
  db?: Queryable;
  /** Not before this instant (a quota reset). */
  startAfter?: Date;
}

export type RefreshHandler = (job: Job<RefreshJobData>) => Promise<JobResult>;

export interface RefreshQueue {
  /** True when a job was queued; false when a waiting refresh of the same record already covers it. */
  enqueue(job: RefreshJobData, options?: EnqueueOptions): Promise<boolean>;
  /** Runs `handler` on up to `concurrency` jobs at once in this process; resolves once the workers poll. */
  work(concurrency: number, handler: RefreshHandler): Promise<void>;
  /** Stops the local workers after their current jobs. */
  stopWork(): Promise<void>;
  /** Moves dead-lettered refreshes back to the queue; returns how many. */
  redrive(): Promise<number>;
}

/** pg-boss job options derived from the settings (also applied to an existing queue). */
export function queueOptions(settings: WebhookSettings) {
  return {
    retryLimit: settings.maxAttempts - 1,
    retryDelay: settings.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: Math.max(settings.retryDelaySeconds, RETRY_DELAY_MAX_SECONDS),
    expireInSeconds: settings.expireSeconds,
    deadLetter: DEAD_LETTER_QUEUE,
  };
}

/**
 * How often the job queue must supervise for refreshes: expired claims are
 * found by its monitor pass, so a dead worker's refresh is retried soon after
 * it expires.
 */
export function refreshSuperviseSeconds(settings: WebhookSettings): number {
  return Math.max(1, Math.min(60, Math.ceil(settings.expireSeconds / 4)));
}

/** Makes sure the refresh queue and its dead letters exist on `queue` with these settings, and queues and works refreshes there. */
export async function openRefreshQueue(queue: JobQueue, settings: WebhookSettings): Promise<RefreshQueue> {
  await queue.ensure(DEAD_LETTER_QUEUE, { retentionSeconds: DEAD_LETTER_RETENTION_SECONDS });
  await queue.ensure(REFRESH_QUEUE, { policy: 'short', notify: true, ...queueOptions(settings) });

  return {
    async enqueue(job, options = {}) {
      const id = await queue.send(REFRESH_QUEUE, job, {
        singletonKey: singletonKey(job),
        ...(options.startAfter ? { startAfter: options.startAfter } : {}),
        ...(options.db ? { db: options.db } : {}),
      });
      return id !== null;
    },
    async work(concurrency, handler) {
      // Workers take jobs two at a time: pg-boss fetches again at once only
      // after a full batch ("burst"), so a backlog drains without waiting out
      // the polling interval between jobs. New jobs wake idle workers (NOTIFY).
      const together = Math.min(concurrency, WORKER_BATCH);
      await queue.work<RefreshJobData>(
        REFRESH_QUEUE,
        {
          perJobResults: true,
          batchSize: WORKER_BATCH,
          burstWhenBatchFull: true,
          localConcurrency: Math.ceil(concurrency / together),
          pollingIntervalSeconds: POLL_SECONDS,
          notifyPollingIntervalSeconds: POLL_SECONDS,
        },
        async (jobs) => {
          const results: JobResult[] = [];
          for (let i = 0; i < jobs.length; i += together) results.push(...(await Promise.all(jobs.slice(i, i + together).map(handler))));
          return results;
        },
      );
    },
    async stopWork() {
      await queue.offWork(REFRESH_QUEUE);
    },
    redrive: () => queue.redrive(DEAD_LETTER_QUEUE),
  };
}

export interface RefreshQueueCounts {
  /** Waiting refreshes that may run now. */
  ready: number;
  /** Waiting refreshes held back until a time (a quota reset). */
  deferred: number;
  /** Failed refreshes waiting for their next attempt. */
  retrying: number;
  /**
   * Refreshes running: those of this process when it works the queue (exact);
   * in a process that does not (status), pg-boss's count of every process's,
   * as its monitor last took it (every few seconds while a replica runs).
   */
  active: number;
  deadLettered: number;
}

/** The refresh queue's counts, read through the job queue open for this App pool (src/queue.ts). All zero before the queue was ever opened. */
export async function refreshQueueCounts(db: Queryable): Promise<RefreshQueueCounts> {
  const queue = jobQueueOf(db);
  const [waiting, deadLettered] = await Promise.all([queue.waiting(REFRESH_QUEUE), queue.deadLetterCount(DEAD_LETTER_QUEUE)]);
  const now = Date.now();
  const counts: RefreshQueueCounts = { ready: 0, deferred: 0, retrying: 0, active: 0, deadLettered };
  for (const job of waiting) {
    if (job.state === 'retry') counts.retrying += 1;
    else if (job.startAfter.getTime() > now) counts.deferred += 1;
    else counts.ready += 1;
  }
  counts.active = queue.worked(REFRESH_QUEUE) ? queue.held(REFRESH_QUEUE).length : (await queue.monitored(REFRESH_QUEUE)).active;
  return counts;
}

/** One status line, e.g. "webhook refreshes: 3 waiting (1 until the quota resets), 1 retrying, 2 running, 0 dead-lettered". */
export function describeRefreshCounts(c: RefreshQueueCounts): string {
  const waiting = c.ready + c.deferred;
  return (
    `webhook refreshes: ${waiting} waiting${c.deferred > 0 ? ` (${c.deferred} until the quota resets)` : ''}, ` +
    `${c.retrying} retrying, ${c.active} running, ${c.deadLettered} dead-lettered` +
    (c.deadLettered > 0 ? ' (see "pmsync webhooks dead-letters")' : '')
  );
}

export interface DeadLetter {
  source: string;
  resource: string;
  id: string;
  failedAt: Date;
  error: string | null;
}

/** The newest dead-lettered refreshes, with the error of their last attempt. */
export async function listDeadLetters(db: Queryable, limit = 50): Promise<DeadLetter[]> {
  const dead = await jobQueueOf(db).waiting<RefreshJobData>(DEAD_LETTER_QUEUE);
  return dead
    .filter((j) => j.state === 'created')
    .sort((a, b) => b.createdOn.getTime() - a.createdOn.getTime())
    .slice(0, limit)
    .map((j) => ({
      source: j.data.source,
      resource: j.data.resource,
      id: j.data.id,
      failedAt: j.createdOn,
      error: errorText(j.sourceOutput),
    }));
}

function errorText(output: unknown): string | null {
  if (output && typeof output === 'object') {
    const o = output as { message?: unknown; value?: { message?: unknown } };
    if (typeof o.message === 'string') return o.message;
    if (typeof o.value?.message === 'string') return o.value.message;
  }
  return null;
}
