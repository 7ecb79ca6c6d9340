/**
 * `pmsync serve`: the scheduler, the run queue's worker, the webhook receiver
 * and refresh worker, and the HTTP endpoints, around one opened App.
 *
 * Stopping (SIGTERM): /readyz turns 503 and new webhook deliveries are
 * refused, the scheduler stops deciding, this replica stops taking runs from
 * the queue, and running ones finish the page in flight, commit it with its
 * checkpoint and end; the next decision (here or in another replica) resumes
 * them. Whatever has not ended within the shutdown timeout is abandoned: its
 * checkpoint is already safe.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from '../app.ts';
import type { Config } from '../config-schema.ts';
import { Metrics } from '../metrics.ts';
import { driftCounts } from '../state/drift.ts';
import { quarantineCounts } from '../state/quarantine.ts';
import { openDispatcher, type Dispatcher } from '../scheduler/dispatch.ts';
import { holderName } from '../state/locks.ts';
import type { StreamEntry } from '../scheduler/plan.ts';
import { executeRun } from '../scheduler/run-job.ts';
import { Scheduler } from '../scheduler/scheduler.ts';
import { sourceReadings } from '../scheduler/status.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { createServeHttp } from './http.ts';
import { readinessCheck } from './readiness.ts';
import { collectStatusPage, renderStatusPage } from './status-page.ts';

/** The webhook receiver and its refresh worker, as serve mounts them. */
export interface WebhookMount {
  handler(req: IncomingMessage, res: ServerResponse): void;
  counts(): Promise<{ backlog: number; deadLetters: number }>;
  stop(): Promise<void>;
}

/** Runs one source may have going at once, across replicas. */
const RUNS_PER_SOURCE = 2;

export interface ServeOptions {
  catalog?: (source: Config['sources'][number]) => StreamEntry[];
  /** Do not tick on the real clock: the caller calls scheduler.tick() (tests, benchmarks). */
  manualTicks?: boolean;
  /** Builds the webhook side; null when no source takes webhooks. */
  webhooks?: (app: App) => Promise<WebhookMount | null>;
}

export interface RunningServe {
  url: string;
  port: number;
  server: Server;
  scheduler: Scheduler;
  dispatcher: Dispatcher;
  metrics: Metrics;
  /** Stops everything; true when every run ended within the shutdown timeout. */
  stop(): Promise<boolean>;
}

export async function startServe(app: App, config: Config, options: ServeOptions = {}): Promise<RunningServe> {
  const settings = config.schedules;
  const serveSettings = config.serve;
  const log = app.logger.child({ component: 'serve' });
  const dispatcher = await openDispatcher(app.databaseUrl, app.logger);
  let scheduler: Scheduler;
  try {
    scheduler = new Scheduler({
      pool: app.pool,
      logger: app.logger.child({ component: 'scheduler' }),
      now: app.ctx.now,
      holder: holderName(),
      config: { ...config, schedules: settings },
      catalog: options.catalog ?? streamCatalog,
      ledgerFor: app.ledgerFor,
      dispatcher,
      onDispatch: (job) => metrics.dispatches.inc({ source: job.source, resource: job.resource, purpose: job.purpose, reason: job.reason }),
    });
  } catch (err) {
    await dispatcher.stop();
    throw err;
  }

  const webhooks = options.webhooks ? await options.webhooks(app) : null;
  let accepting = true;
  const readiness = readinessCheck(app.pool);
  const running = new Set<string>();
  const metrics = new Metrics({
    sources: () => sourceReadings(app, config, scheduler),
    running: () => [...running].map((key) => ({ source: key.slice(0, key.indexOf('/')), resource: key.slice(key.indexOf('/') + 1) })),
    webhooks: webhooks ? () => webhooks.counts() : undefined,
    ready: async () => accepting && (await readiness()).ready,
    onCollectError: (err) => log.warn({ err }, 'a metric could not be read'),
  });
  metrics.watchDrift(
    () => driftCounts(app.pool),
    (err) => log.warn({ err }, 'a metric could not be read'),
  );
  metrics.watchQuarantine(
    () => quarantineCounts(app.pool),
    (err) => log.warn({ err }, 'a metric could not be read'),
  );

  await dispatcher.work(settings.concurrency, RUNS_PER_SOURCE, async (job) => {
    const key = `${job.source}/${job.resource}`;
    running.add(key);
    try {
      await executeRun(
        {
          ctx: app.ctx,
          config,
          logger: app.logger,
          onRun: (j, result, seconds) => metrics.recordStream({ source: j.source, resource: j.resource, mode: j.purpose }, result, seconds),
        },
        job,
      );
    } finally {
      running.delete(key);
      scheduler.invalidate(job.source);
    }
  });

  const server = createServeHttp({
    accepting: () => accepting,
    readiness,
    metrics: () => metrics.render(),
    statusPage: async (query) =>
      renderStatusPage(await collectStatusPage(app, config, scheduler, { source: query.get('source') ?? undefined })),
    webhooks: webhooks ? (req, res) => webhooks.handler(req, res) : undefined,
    onError: (err) => log.error({ err }, 'request failed'),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(serveSettings.port, serveSettings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  log.info(
    {
      url,
      webhooks: webhooks !== null,
      streams: scheduler.streams.map((s) => ({
        key: s.key,
        schedule: s.schedule.mode === 'cron' ? `${s.schedule.cron} ${s.schedule.timeZone}` : s.schedule.mode,
        maxStalenessMinutes: s.maxStalenessMinutes,
      })),
      budgets: Object.fromEntries(config.sources.map((s) => [s.name, s.budget])),
    },
    'serving',
  );
  await scheduler.start();
  if (!options.manualTicks) scheduler.startTimer();

  let stopping: Promise<boolean> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      accepting = false;
      const deadline = Date.now() + serveSettings.shutdownTimeoutSeconds * 1000;
      log.info({ timeoutSeconds: serveSettings.shutdownTimeoutSeconds, running: [...running] }, 'stopping: letting in-flight pages commit');
      scheduler.stop();
      if (!app.abort.signal.aborted) app.abort.abort();
      server.close();
      server.closeIdleConnections();
      const drained = await within(
        dispatcher.stopWork().then(() => true),
        deadline - Date.now(),
      );
      await within(dispatcher.stop(), deadline - Date.now());
      if (webhooks) await within(webhooks.stop(), deadline - Date.now());
      server.closeAllConnections();
      if (drained) log.info('stopped');
      else
        log.error(
          { running: [...running] },
          'shutdown timeout reached with runs still going; their checkpoints are saved and the next run resumes them',
        );
      return drained === true;
    })());

  return { url, port: address.port, server, scheduler, dispatcher, metrics, stop };
}

/** Waits for `work` at most `ms`; resolves with its value, or undefined when it took longer. The timer never outlives it. */
async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.catch(() => undefined),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, ms)))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
