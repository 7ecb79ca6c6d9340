/**
 * Webhook-triggered refresh, assembled for a process: the refresh queue, the
 * receiver (a request handler to mount under /webhooks/) and the worker.
 * `pmsync webhooks receive` runs this alone, with the notified checks no serve
 * runs (src/webhooks/notified-checks.ts); `pmsync serve` mounts it next to its
 * own endpoints and its scheduler. Either hands it the process's job queue
 * (src/queue.ts), and stops that queue after this.
 */
import type { Config, SourceConfig } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import type { JobQueue } from '../queue.ts';
import type { Redactor } from '../redact.ts';
import type { QuotaLedger } from '../state/quota.ts';
import type { SyncContext } from '../sync/context.ts';
import { openRefreshQueue, type RefreshQueue } from './queue.ts';
import { createWebhookReceiver, type WebhookReceiver } from './receiver.ts';
import { startRefreshWorker, type RefreshWorker } from './worker.ts';
import { startNotifiedChecks, type NotifiedChecks } from './notified-checks.ts';

export { WEBHOOK_PATH_PREFIX } from './events.ts';
export { createWebhookReceiver, type ReceiverDeps, type ReceiverStats, type WebhookReceiver } from './receiver.ts';
export { startRefreshWorker, type RefreshWorker, type WorkerDeps, type WorkerStats } from './worker.ts';
export { describeWebhookMode, startNotifiedChecks, type CheckMode, type NotifiedChecks } from './notified-checks.ts';
export {
  listDeadLetters,
  openRefreshQueue,
  refreshQueueCounts,
  refreshSuperviseSeconds,
  type RefreshQueue,
  type RefreshQueueCounts,
} from './queue.ts';

/** What the webhook side takes of the process it runs in (src/app.ts, App, is one). */
export interface WebhooksHost {
  /** The configuration in force (a reload replaces it). */
  readonly config: Config;
  pool: Pool;
  logger: Logger;
  redactor: Redactor;
  ctx: SyncContext;
  ledgerFor(source: SourceConfig): QuotaLedger;
}

export interface Webhooks {
  queue: RefreshQueue;
  receiver: WebhookReceiver;
  /** Null when started with `worker: false` (a receive-only replica). */
  worker: RefreshWorker | null;
  /** Null unless started with `checkNotified` and a worker. */
  checks: NotifiedChecks | null;
  /** Stops the notified checks and the worker (after their running work). Close the HTTP server first; stop the job queue after. */
  stop(): Promise<void>;
}

export interface WebhooksOptions {
  /** False: a receive-only replica. */
  worker?: boolean;
  /** Check notified streams while no serve replica schedules them (`webhooks receive`; serve has its scheduler). */
  checkNotified?: boolean;
  /** Do not tick on the real clock: the caller calls checks.tick() (tests). */
  manualTicks?: boolean;
  /** Looks at the config file for a change now, for a refresh of a source this process does not know. */
  reload?: () => Promise<void>;
}

export async function startWebhooks(app: WebhooksHost, jobs: JobQueue, options: WebhooksOptions = {}): Promise<Webhooks> {
  const queue = await openRefreshQueue(jobs, app.config.webhooks);
  let worker: RefreshWorker | null = null;
  let checks: NotifiedChecks | null = null;
  const deps = {
    config: () => app.config,
    reload: options.reload,
    ctx: app.ctx,
    pool: app.pool,
    logger: app.logger,
    redactor: app.redactor,
  };
  try {
    if (options.worker !== false) {
      worker = await startRefreshWorker({ ...deps, queue });
      if (options.checkNotified) {
        checks = await startNotifiedChecks({ ...deps, ledgerFor: app.ledgerFor });
        if (!options.manualTicks) checks.startTimer();
      }
    }
  } catch (err) {
    await worker?.stop().catch(() => undefined);
    throw err;
  }
  const receiver = createWebhookReceiver({ config: () => app.config, pool: app.pool, logger: app.logger, queue, now: app.ctx.now });
  return {
    queue,
    receiver,
    worker,
    checks,
    async stop() {
      await checks?.stop();
      await worker?.stop();
    },
  };
}
