/**
 * The refresh worker: takes refresh jobs from the queue and refetches each
 * record through the source's HttpClient (configured base URL, pmsync's own
 * credentials, no redirects followed, purpose 'webhook' (counted in the
 * scheduled-spend budget), then writes it like a page (src/sync/refresh.ts).
 *
 * What happens to a job:
 * - the record was written, or the API answered 404 (row marked not seen): done;
 * - the daily quota is used up: a new job for the same record is queued to
 *   start after the quota resets and this one is done. Waiting for the quota
 *   is not a failure, so it never uses up attempts or reaches the dead letters;
 * - a failure a retry may cure (network, timeout, 5xx): retried with backoff,
 *   dead-lettered after the configured attempts;
 * - a failure no retry can cure (401, 400, a redirect, a source no longer
 *   configured): dead-lettered at once. A source this process does not know
 *   is looked for in the config file first (`reload`): another replica may
 *   have taken the new file, and queued the job, before this one;
 * - the source is paused because its runs fail as a whole
 *   (src/scheduler/source-failures.ts): nothing is sent; a new job for the
 *   same record is queued to start when the pause ends, as for the quota.
 *   A refresh's own failures do not pause the source: one record's refresh
 *   has its retries and dead letters, and the next run decides for the source.
 */
import type { Job, JobResult } from '../queue.ts';
import type { Config } from '../config/schema.ts';
import { PmsyncError, QuotaExhaustedError } from '../errors.ts';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import type { Redactor } from '../redact.ts';
import type { SyncContext } from '../sync/context.ts';
import { refreshRecord } from '../sync/refresh.ts';
import { REST_STREAMS } from '../sync/streams/index.ts';
import type { RestStream } from '../sync/streams/rest.ts';
import { sourcePausedUntil } from '../state/source-health.ts';
import { pruneEvents } from '../state/webhook-events.ts';
import type { RefreshJobData, RefreshQueue } from './queue.ts';

/** How often one worker deletes events past their retention. */
const PRUNE_INTERVAL_MS = 3_600_000;

export interface WorkerDeps {
  /** The configuration in force (a reload replaces it); its `webhooks` settings are read once, at start. */
  config: () => Config;
  /** Looks at the config file for a change now (src/serve/reload.ts). */
  reload?: () => Promise<void>;
  ctx: SyncContext;
  pool: Pool;
  logger: Logger;
  redactor: Redactor;
  queue: Pick<RefreshQueue, 'enqueue' | 'work' | 'stopWork'>;
}

export interface WorkerStats {
  written: number;
  notVisible: number;
  /** Put off until the quota resets. */
  deferred: number;
  /** Failed attempts that will be retried. */
  retried: number;
  deadLettered: number;
}

export interface RefreshWorker {
  stats(): WorkerStats;
  /** Stops taking jobs and waits for the running ones. */
  stop(): Promise<void>;
}

export async function startRefreshWorker(deps: WorkerDeps): Promise<RefreshWorker> {
  const settings = deps.config().webhooks;
  const log = deps.logger.child({ component: 'refresh-worker' });
  const counts: WorkerStats = { written: 0, notVisible: 0, deferred: 0, retried: 0, deadLettered: 0 };

  const fail = (job: Job<RefreshJobData>, status: 'failed' | 'deadletter', err: unknown): JobResult => {
    const message = deps.redactor.redact((err as Error).message ?? String(err));
    const code = err instanceof PmsyncError ? err.code : 'UNEXPECTED';
    const last = status === 'deadletter' || job.retryCount + 1 >= settings.maxAttempts;
    counts[last ? 'deadLettered' : 'retried'] += 1;
    log[last ? 'error' : 'warn'](
      { ...job.data, attempt: job.retryCount + 1, code, error: message },
      last ? 'refresh dead-lettered' : 'refresh failed; will retry',
    );
    return { id: job.id, status, output: { code, message } };
  };

  const handle = async (job: Job<RefreshJobData>): Promise<JobResult> => {
    const { source: name, resource, id } = job.data;
    const find = () => deps.config().sources.find((s) => s.name === name);
    let source = find();
    if (!source && deps.reload) {
      await deps.reload();
      source = find();
    }
    const stream = REST_STREAMS.find(
      (s): s is RestStream & { recordPath: (id: string) => string } => s.resource === resource && s.recordPath !== undefined,
    );
    if (!source || source.kind !== 'core' || !stream) {
      return fail(
        job,
        'deadletter',
        new PmsyncError('CONFIG_INVALID', `source "${name}" is no longer a configured core source, or ${resource} cannot be refreshed`),
      );
    }
    const pausedUntil = await sourcePausedUntil(deps.pool, name, deps.ctx.now());
    if (pausedUntil) {
      await deps.queue.enqueue(job.data, { startAfter: pausedUntil });
      counts.deferred += 1;
      log.debug({ ...job.data, pausedUntil: pausedUntil.toISOString() }, 'source paused: refresh put off until the pause ends');
      return { id: job.id, status: 'completed', output: { outcome: 'deferred', pausedUntil: pausedUntil.toISOString() } };
    }
    try {
      const outcome = await refreshRecord(deps.ctx, source, stream, id, 'webhook');
      counts[outcome.status === 'written' ? 'written' : 'notVisible'] += 1;
      log.debug({ ...job.data, outcome: outcome.status }, 'record refreshed');
      return { id: job.id, status: 'completed', output: { outcome: outcome.status } };
    } catch (err) {
      if (err instanceof QuotaExhaustedError) {
        await deps.queue.enqueue(job.data, { startAfter: err.resumeAt });
        counts.deferred += 1;
        log.info({ ...job.data, resumeAt: err.resumeAt.toISOString() }, 'quota used up: refresh put off until the quota resets');
        return { id: job.id, status: 'completed', output: { outcome: 'deferred', resumeAt: err.resumeAt.toISOString() } };
      }
      if (err instanceof PmsyncError && !err.retryable && err.code !== 'SHUTDOWN') return fail(job, 'deadletter', err);
      return fail(job, 'failed', err);
    }
  };

  const prune = () =>
    pruneEvents(deps.pool, settings.eventRetentionDays).then(
      (n) => (n > 0 ? log.info({ deleted: n }, 'old webhook events deleted') : undefined),
      (err: unknown) => log.warn({ err }, 'could not delete old webhook events'),
    );
  void prune();
  const pruner = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
  pruner.unref();

  await deps.queue.work(settings.concurrency, handle);
  log.info({ concurrency: settings.concurrency }, 'refresh worker started');
  return {
    stats: () => ({ ...counts }),
    async stop() {
      clearInterval(pruner);
      await deps.queue.stopWork();
    },
  };
}
