/**
 * Webhook-triggered refresh, assembled for a process: the refresh queue, the
 * receiver (a request handler to mount under /webhooks/) and the worker.
 * `pmsync webhooks receive` runs this alone; `pmsync serve` mounts it next to
 * its own endpoints.
 */
import type { App } from '../app.ts';
import { openRefreshQueue, refreshQueueCounts, type RefreshQueue, type RefreshQueueCounts } from './queue.ts';
import { createWebhookReceiver, type WebhookReceiver } from './receiver.ts';
import { startRefreshWorker, type RefreshWorker } from './worker.ts';

export { WEBHOOK_PATH_PREFIX } from './events.ts';
export { createWebhookReceiver, type ReceiverDeps, type ReceiverStats, type WebhookReceiver } from './receiver.ts';
export { startRefreshWorker, type RefreshWorker, type WorkerDeps, type WorkerStats } from './worker.ts';
export { listDeadLetters, openRefreshQueue, refreshQueueCounts, type RefreshQueue, type RefreshQueueCounts } from './queue.ts';

export interface Webhooks {
  queue: RefreshQueue;
  receiver: WebhookReceiver;
  /** Null when started with `worker: false` (a receive-only replica). */
  worker: RefreshWorker | null;
  /** Backlog and dead letters, for status and metrics. */
  counts(): Promise<RefreshQueueCounts>;
  /** Stops the worker (after its running refreshes) and the queue. Close the HTTP server first. */
  stop(): Promise<void>;
}

export interface WebhooksOptions {
  /** False: a receive-only replica. */
  worker?: boolean;
  /** Looks at the config file for a change now, for a refresh of a source this process does not know. */
  reload?: () => Promise<void>;
}

export async function startWebhooks(app: App, options: WebhooksOptions = {}): Promise<Webhooks> {
  const queue = await openRefreshQueue({ databaseUrl: app.databaseUrl, logger: app.logger, settings: app.config.webhooks });
  let worker: RefreshWorker | null = null;
  try {
    if (options.worker !== false) {
      worker = await startRefreshWorker({
        config: () => app.config,
        reload: options.reload,
        ctx: app.ctx,
        pool: app.pool,
        logger: app.logger,
        redactor: app.redactor,
        queue,
      });
    }
  } catch (err) {
    await queue.stop().catch(() => undefined);
    throw err;
  }
  const receiver = createWebhookReceiver({ config: () => app.config, pool: app.pool, logger: app.logger, queue, now: app.ctx.now });
  return {
    queue,
    receiver,
    worker,
    counts: () => refreshQueueCounts(app.pool),
    async stop() {
      await worker?.stop();
      await queue.stop();
    },
  };
}
