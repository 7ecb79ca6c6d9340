/**
 * `pmsync serve`: the scheduler, the webhook receiver and refresh worker, and
 * the HTTP endpoints, around one opened App.
 *
 * Stopping (SIGTERM): /readyz turns 503 and new webhook deliveries are
 * refused, timers stop, queued runs are dropped (their fires handed back),
 * running ones finish the page in flight, commit it with its checkpoint and
 * end; the next start resumes them. Whatever has not ended within the
 * shutdown timeout is abandoned: its checkpoint is already safe.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from '../app.ts';
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { Metrics, type QuotaReading } from '../metrics.ts';
import { holderName } from '../scheduler/lock.ts';
import { nextFire, parseCron } from '../scheduler/crontab.ts';
import { planSchedules, type Schedule, type StreamEntry } from '../scheduler/plan.ts';
import { Scheduler, type FireReason, type StreamRunOutcome, type TimerFactory } from '../scheduler/scheduler.ts';
import { schedulesSchema, serveSchema } from '../scheduler/settings.ts';
import { QuotaExhaustedError } from '../errors.ts';
import { syncSource } from '../sync/sync-source.ts';
import { streamCatalog } from './catalog.ts';
import { createServeHttp } from './http.ts';
import { readinessCheck } from './readiness.ts';

/** The webhook receiver and its refresh worker, as serve mounts them. */
export interface WebhookMount {
  handler(req: IncomingMessage, res: ServerResponse): void;
  counts(): Promise<{ backlog: number; deadLetters: number }>;
  stop(): Promise<void>;
}

export interface ServeOptions {
  catalog?: (source: Config['sources'][number]) => StreamEntry[];
  timers?: TimerFactory;
  /** Builds the webhook side; null when no source takes webhooks. */
  webhooks?: (app: App) => Promise<WebhookMount | null>;
}

export interface RunningServe {
  url: string;
  port: number;
  server: Server;
  scheduler: Scheduler;
  metrics: Metrics;
  schedules: Schedule[];
  /** Stops everything; true when every run ended within the shutdown timeout. */
  stop(): Promise<boolean>;
}

export async function startServe(app: App, config: Config, options: ServeOptions = {}): Promise<RunningServe> {
  const settings = config.schedules ?? schedulesSchema.parse({});
  const serveSettings = config.serve ?? serveSchema.parse({});
  const plan = planSchedules(settings, config.sources, options.catalog ?? streamCatalog);
  if (plan.problems.length > 0) throw new ConfigError(plan.problems);
  const sources = new Map(config.sources.map((s) => [s.name, s]));
  const log = app.logger.child({ component: 'serve' });

  const webhooks = options.webhooks ? await options.webhooks(app) : null;
  const metrics = new Metrics({
    quota: async () => {
      const out: QuotaReading[] = [];
      for (const s of config.sources) {
        if (s.kind === 'pro') continue;
        const snap = await app.ledgerFor(s).snapshot();
        out.push({ source: s.name, used: snap.used, limit: snap.dailyLimit, exhausted: snap.exhaustedUntil !== null });
      }
      return out;
    },
    lastSuccess: async () => {
      const res = await app.pool.query<{ source: string; resource: string; at: Date }>(
        `SELECT source, resource, max(ended_at) AS at FROM pmsync.runs WHERE status = 'succeeded' GROUP BY source, resource`,
      );
      return res.rows;
    },
    running: () =>
      scheduler.running().map((key) => ({ source: key.slice(0, key.indexOf('/')), resource: key.slice(key.indexOf('/') + 1) })),
    webhooks: webhooks ? () => webhooks.counts() : undefined,
    onCollectError: (err) => log.warn({ err }, 'a metric could not be read'),
  });

  const runStream = async (schedule: Schedule, reason: FireReason): Promise<StreamRunOutcome> => {
    const source = sources.get(schedule.source)!;
    const started = performance.now();
    const result = await syncSource(app.ctx, source, [schedule.resource], { lockWaitMs: 0 });
    metrics.recordStream(schedule, result, (performance.now() - started) / 1000);
    const error = result.fatal ?? result.failures[0]?.error;
    if (error) log.warn({ schedule: schedule.key, reason, err: error }, 'scheduled run did not succeed');
    return {
      locked: result.locked?.includes(schedule.resource) ?? false,
      quotaResumeAt: result.fatal instanceof QuotaExhaustedError ? result.fatal.resumeAt : undefined,
    };
  };

  const scheduler = new Scheduler(plan.schedules, {
    pool: app.pool,
    logger: app.logger.child({ component: 'scheduler' }),
    now: app.ctx.now,
    holder: holderName(),
    catchUp: settings.catchUp,
    timers: options.timers,
    runStream,
    onTick: (s, outcome) => metrics.ticks.inc({ source: s.source, resource: s.resource, outcome }),
  });

  let accepting = true;
  const server = createServeHttp({
    accepting: () => accepting,
    readiness: readinessCheck(app.pool),
    metrics: () => metrics.render(),
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

  const now = app.ctx.now();
  log.info(
    {
      url,
      webhooks: webhooks !== null,
      schedules: plan.schedules.map((s) => ({
        key: s.key,
        cron: s.cron,
        timeZone: s.timeZone,
        next: nextFire(parseCron(s.cron), s.timeZone, now)?.toISOString() ?? null,
      })),
      off: plan.off,
    },
    'serving',
  );
  await scheduler.start();

  let stopping: Promise<boolean> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      accepting = false;
      const deadline = Date.now() + serveSettings.shutdownTimeoutSeconds * 1000;
      log.info(
        { timeoutSeconds: serveSettings.shutdownTimeoutSeconds, running: scheduler.running() },
        'stopping: letting in-flight pages commit',
      );
      if (!app.abort.signal.aborted) app.abort.abort();
      server.close();
      server.closeIdleConnections();
      const drained = await scheduler.stop(Math.max(0, deadline - Date.now()));
      if (webhooks) await within(webhooks.stop(), deadline - Date.now());
      server.closeAllConnections();
      if (drained) log.info('stopped');
      else
        log.error(
          { running: scheduler.running() },
          'shutdown timeout reached with runs still going; their checkpoints are saved and the next start resumes them',
        );
      return drained;
    })());

  return { url, port: address.port, server, scheduler, metrics, schedules: plan.schedules, stop };
}

/** Waits for `work` at most `ms`; the timer never outlives it. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}
