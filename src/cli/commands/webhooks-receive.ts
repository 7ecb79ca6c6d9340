/**
 * `pmsync webhooks receive`: the webhook receiver and the refresh worker in
 * one process, until SIGTERM/SIGINT. With its worker it also checks the
 * streams notifications mark while no serve replica schedules them
 * (src/webhooks/notified-checks.ts), and says at start which it does. Put it
 * behind a TLS-terminating reverse proxy (docs/webhooks.md); it listens on
 * loopback unless told otherwise.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Command, InvalidArgumentError } from 'commander';
import type { App } from '../../app.ts';
import { ConfigError } from '../../errors.ts';
import type { JobQueue } from '../../queue.ts';
import { applyPolicies } from '../../sync/privacy-policies.ts';
import { WEBHOOK_PATH_PREFIX } from '../../webhooks/events.ts';
import { configFrom, fail, requireSources, withApp } from '../shared.ts';

/** Deliveries are small and answered in milliseconds; a request slower than this is dropped. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Connections the job queue may open for the refreshes. */
const QUEUE_CONNECTIONS = 4;

function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  return n;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

export function receiveCommand(): Command {
  return new Command('receive')
    .description(`receive webhook deliveries (POST ${WEBHOOK_PATH_PREFIX}<source>/<token>) and run the refresh worker until SIGTERM/SIGINT`)
    .option('-p, --port <port>', 'port to listen on (0: any free port)', parsePort, 8080)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--no-worker', 'only receive and queue; refreshes are run by other processes')
    .action(async (opts: { port: number; host: string; worker: boolean }, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        requireSources(config);
        if (!config.sources.some((s) => s.kind === 'core'))
          throw new ConfigError(['no core source is configured: only the Core API sends webhooks']);
        // The receiver, the worker and their queue (pg-boss) load only when this command runs (src/cli/main.ts).
        const { refreshSuperviseSeconds } = await import('../../webhooks/index.ts');
        const { openJobQueue } = await import('../../queue.ts');
        await withApp(config, async (app) => {
          await applyPolicies(app.pool, app.logger, config.sources);
          const queue = await openJobQueue(app, {
            mode: 'work',
            superviseSeconds: refreshSuperviseSeconds(config.webhooks),
            connections: QUEUE_CONNECTIONS,
          });
          try {
            await receive(app, queue, opts);
          } finally {
            await queue.stop();
          }
        });
      } catch (err) {
        fail(err);
      }
    });
}

/** Receives (and with a worker, refreshes and checks) on the process's job queue until the App is aborted. */
async function receive(app: App, queue: JobQueue, opts: { port: number; host: string; worker: boolean }): Promise<void> {
  const { describeWebhookMode, startWebhooks } = await import('../../webhooks/index.ts');
  const webhooks = await startWebhooks(app, queue, { worker: opts.worker, checkNotified: true });
  const server = createServer((req, res) => {
    if ((req.url ?? '').startsWith(WEBHOOK_PATH_PREFIX)) return webhooks.receiver.handler(req, res);
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end('{"error":"not found"}');
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  let address: AddressInfo;
  try {
    address = await listen(server, opts.port, opts.host);
  } catch (err) {
    await webhooks.stop();
    throw err;
  }
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  process.stdout.write(
    `webhook receiver listening on http://${shown}:${address.port}${WEBHOOK_PATH_PREFIX}<source>/<token>${webhooks.worker ? ', refresh worker running' : ''}\n`,
  );
  const mode = describeWebhookMode(app.config, { worker: webhooks.worker !== null, serve: webhooks.checks?.mode() === 'serve' });
  process.stdout.write(`${mode}\n`);
  app.logger.info({ host: address.address, port: address.port, worker: webhooks.worker !== null }, 'webhook receiver listening');
  await untilAborted(app.abort.signal);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  await webhooks.stop();
}
