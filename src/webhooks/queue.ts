/**
 * The refresh queue: a pg-boss queue in PostgreSQL (schema "pgboss"), shared
 * by every replica. pg-boss claims jobs with SKIP LOCKED, retries failures
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
import { PgBoss, type Job, type JobResult } from 'pg-boss';
import { PGBOSS_SCHEMA } from '../db/pgboss.ts';
import type { Queryable } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import type { WebhookSettings } from './settings.ts';

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
  stop(): Promise<void>;
}

export interface QueueDeps {
  databaseUrl: string;
  logger: Logger;
  settings: WebhookSettings;
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

/** Connects to PostgreSQL, installs or migrates pg-boss's schema when needed, and makes sure both queues exist. */
export async function openRefreshQueue(deps: QueueDeps): Promise<RefreshQueue> {
  const sweep = Math.max(1, Math.min(60, Math.ceil(deps.settings.expireSeconds / 4)));
  const boss = new PgBoss({
    connectionString: deps.databaseUrl,
    schema: PGBOSS_SCHEMA,
    application_name: 'pmsync-webhooks',
    max: 4,
    schedule: false,
    // Expired claims are found by the monitor pass of this sweep: run both
    // often enough that a dead worker's refresh is retried soon after it expires.
    superviseIntervalSeconds: sweep,
    monitorIntervalSeconds: sweep,
    useListenNotify: true,
  });
  boss.on('error', (err: Error) => deps.logger.warn({ err }, 'refresh queue: database error (pg-boss retries on its own)'));
  boss.on('warning', (w: { message?: string }) => deps.logger.warn({ warning: w.message }, 'refresh queue warning'));
  await boss.start();
  await boss.createQueue(DEAD_LETTER_QUEUE, { retentionSeconds: DEAD_LETTER_RETENTION_SECONDS });
  const options = queueOptions(deps.settings);
  await boss.createQueue(REFRESH_QUEUE, { policy: 'short', notify: true, ...options });
  // createQueue leaves an existing queue as it was: apply changed settings.
  await boss.updateQueue(REFRESH_QUEUE, options);

  const adapter = (db: Queryable) => ({ executeSql: (text: string, values?: unknown[]) => db.query(text, values) });
  return {
    async enqueue(job, options = {}) {
      const id = await boss.send(REFRESH_QUEUE, job, {
        singletonKey: singletonKey(job),
        ...(options.startAfter ? { startAfter: options.startAfter } : {}),
        ...(options.db ? { db: adapter(options.db) } : {}),
      });
      return id !== null;
    },
    async work(concurrency, handler) {
      // Workers take jobs two at a time: pg-boss fetches again at once only
      // after a full batch ("burst"), so a backlog drains without waiting out
      // the polling interval between jobs. New jobs wake idle workers (NOTIFY).
      const together = Math.min(concurrency, WORKER_BATCH);
      await boss.work<RefreshJobData>(
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
      await boss.offWork(REFRESH_QUEUE, { wait: true });
    },
    async redrive() {
      let moved = 0;
      for (;;) {
        const n = await boss.redrive(DEAD_LETTER_QUEUE, { limit: 1000 });
        moved += n;
        if (n < 1000) return moved;
      }
    },
    async stop() {
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
}

export interface RefreshQueueCounts {
  /** Waiting refreshes that may run now. */
  ready: number;
  /** Waiting refreshes held back until a time (a quota reset). */
  deferred: number;
  /** Failed refreshes waiting for their next attempt. */
  retrying: number;
  active: number;
  deadLettered: number;
}

/**
 * Counts read straight from pg-boss's job table, so `pmsync status` and the
 * metrics need no running queue. All zero before the queue was ever opened.
 */
export async function refreshQueueCounts(db: Queryable): Promise<RefreshQueueCounts> {
  const exists = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${PGBOSS_SCHEMA}.job`]);
  if (!exists.rows[0]?.t) return { ready: 0, deferred: 0, retrying: 0, active: 0, deadLettered: 0 };
  const res = await db.query<RefreshQueueCounts>(
    `SELECT
       count(*) FILTER (WHERE name = $1 AND state = 'created' AND start_after <= now())::int AS ready,
       count(*) FILTER (WHERE name = $1 AND state = 'created' AND start_after > now())::int AS deferred,
       count(*) FILTER (WHERE name = $1 AND state = 'retry')::int AS retrying,
       count(*) FILTER (WHERE name = $1 AND state = 'active')::int AS active,
       count(*) FILTER (WHERE name = $2 AND state IN ('created', 'retry', 'active'))::int AS "deadLettered"
     FROM ${PGBOSS_SCHEMA}.job WHERE name IN ($1, $2) AND state IN ('created', 'retry', 'active')`,
    [REFRESH_QUEUE, DEAD_LETTER_QUEUE],
  );
  return res.rows[0]!;
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
  const exists = await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${PGBOSS_SCHEMA}.job`]);
  if (!exists.rows[0]?.t) return [];
  const res = await db.query<{ data: RefreshJobData; created_on: Date; output: unknown }>(
    `SELECT data, created_on, source_output AS output FROM ${PGBOSS_SCHEMA}.job WHERE name = $1 AND state = 'created' ORDER BY created_on DESC LIMIT $2`,
    [DEAD_LETTER_QUEUE, limit],
  );
  return res.rows.map((r) => ({
    source: r.data.source,
    resource: r.data.resource,
    id: r.data.id,
    failedAt: r.created_on,
    error: errorText(r.output),
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
