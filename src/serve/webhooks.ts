/**
 * The webhook side of `serve`: the receiver mounted under /webhooks/ and the
 * refresh worker (src/webhooks), started only when a Core source is configured
 * (only the Core API sends webhooks), on serve's job queue.
 */
import type { App } from '../app.ts';
import type { JobQueue } from '../queue.ts';
import { startWebhooks } from '../webhooks/index.ts';
import type { WebhookMount } from './serve.ts';

export async function mountWebhooks(app: App, options: { queue: JobQueue; reload?: () => Promise<void> }): Promise<WebhookMount | null> {
  if (!app.config.sources.some((s) => s.kind === 'core')) return null;
  const webhooks = await startWebhooks(app, options.queue, { reload: options.reload });
  return {
    handler: (req, res) => webhooks.receiver.handler(req, res),
    stop: () => webhooks.stop(),
  };
}
