/**
 * `pmsync serve`: the scheduler, the run queue's worker, the webhook receiver
 * and refresh worker, and the HTTP endpoints, around one opened App and one
 * job queue (src/queue.ts) holding both the run and the refresh queues.
 *
 * Stopping (SIGTERM): /readyz turns 503 and new webhook deliveries are
 * refused, the scheduler stops deciding, this replica stops taking runs from
 * the queue, and running ones finish the page in flight, commit it with its
 * checkpoint and end; the next decision (here or in another replica) resumes
 * them. Whatever has not ended within the shutdown timeout is abandoned: its
 * checkpoint is already safe.
 *
 * Reloading (SIGHUP, or a change of the config file seen by its poll; see
 * src/serve/reload.ts): the new configuration goes to the app, the scheduler,
 * the run worker, the webhook side, the status page and the metrics, which
 * all read the one in force when they need it. A run in progress ends with
 * the settings it started with; one of a removed source stops at its next
 * page boundary, its checkpoint saved.
 */
import { recordStreamTargets } from '../scheduler/targets.ts';
import { applyPolicies } from '../sync/privacy-policies.ts';
import { describePurge, purgeRetention } from '../sync/retention.ts';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import { Metrics } from '../metrics.ts';
import { openJobQueue, type JobQueue } from '../queue.ts';
import { openDispatcher, SUPERVISE_SECONDS, type Dispatcher } from '../scheduler/dispatch.ts';
import { refreshSuperviseSeconds } from '../webhooks/queue.ts';
import { holderName, LockSession, shardLeases } from '../state/locks.ts';
import type { StreamEntry } from '../scheduler/plan.ts';
import { executeRun } from '../scheduler/run-job.ts';
import { Scheduler } from '../scheduler/scheduler.ts';
import { metricsReads, sourceReadings } from '../status/readings.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { createServeHttp, PROTECTED_PATHS } from './http.ts';
import { readinessCheck } from './readiness.ts';
import { renderStatusPage } from './status-page.ts';
import { collectStatusPage } from '../status/page.ts';
import { ConfigReloader } from './reload.ts';
import { changedSettings } from '../config/diff.ts';
import { liftSourcePause } from '../state/source-health.ts';

/** Settings whose change may cure a failing source: how it is reached and who it says it is. */
const REACHING = new Set(['baseUrl', 'apikey', 'username', 'password', 'token', 'credentialsIn', 'subsetName', 'practiceId']);

/** The webhook receiver and its refresh worker, as serve mounts them. */
export interface WebhookMount {
  handler(req: IncomingMessage, res: ServerResponse): void;
  stop(): Promise<void>;
}

/** Runs one source may have going at once, across replicas. */
const RUNS_PER_SOURCE = 2;
/** Connections the job queue may open for the runs, and as many more for the webhook refreshes. */
const QUEUE_CONNECTIONS = 2;

export interface ServeOptions {
  catalog?: (source: Config['sources'][number]) => StreamEntry[];
  /** Do not tick on the real clock: the caller calls scheduler.tick() (tests, benchmarks). */
  manualTicks?: boolean;
  /** Plan every source at every tick rather than when its plan can change (tests show both decide the same). */
  planEveryTick?: boolean;
  /** Builds the webhook side on serve's job queue; null when no source takes webhooks. */
  webhooks?: (app: App, options: { queue: JobQueue; reload: () => Promise<void> }) => Promise<WebhookMount | null>;
  /** The config file to reload while serving, and how to load it as at start (with the command line's settings). */
  configFile?: { path: string; load: () => Config };
}

export interface RunningServe {
  url: string;
  port: number;
  server: Server;
  scheduler: Scheduler;
  /** The job queue (pg-boss) of both the runs and the webhook refreshes. */
  queue: JobQueue;
  dispatcher: Dispatcher;
  metrics: Metrics;
  /** `source/resource` of the runs going in this process. */
  running(): string[];
  /**
   * Reads the config file and applies it if it changed (force: whatever its
   * hash, as on SIGHUP); 'unchanged' when serve was given no config file.
   */
  reload(options?: { force?: boolean }): Promise<'unchanged' | 'applied' | 'refused'>;
  /** Stops everything; true when every run ended within the shutdown timeout. */
  stop(): Promise<boolean>;
}

const PURGE_INTERVAL_MS = 3_600_000;

export async function startServe(app: App, config: Config, options: ServeOptions = {}): Promise<RunningServe> {
  // What is built once here (the queue worker's concurrency, the HTTP server, the shutdown timeout) keeps these values.
  const settings = config.schedules;
  const serveSettings = config.serve;
  const log = app.logger.child({ component: 'serve' });
  if (app.config !== config) app.applyConfig(config);
  // Before any run or refresh writes: stored data follows a stricter column policy, a looser one is said.
  await applyPolicies(app.pool, app.logger, config.sources);
  const current = () => app.config;
  // One pg-boss for the runs and the refreshes, supervising as often as the stricter of the two needs.
  const queue = await openJobQueue(app, {
    mode: 'work',
    superviseSeconds: options.webhooks ? Math.min(SUPERVISE_SECONDS, refreshSuperviseSeconds(config.webhooks)) : SUPERVISE_SECONDS,
    connections: options.webhooks ? 2 * QUEUE_CONNECTIONS : QUEUE_CONNECTIONS,
  });
  let dispatcher: Dispatcher;
  let scheduler: Scheduler;
  // Every run of this replica holds its locks on this one connection (docs/scaling.md, "PostgreSQL connections").
  const locks = new LockSession(app.pool);
  try {
    dispatcher = await openDispatcher(queue, { databaseUrl: app.databaseUrl, heartbeatSeconds: serveSettings.runHeartbeatSeconds, locks });
    scheduler = new Scheduler({
      pool: app.pool,
      logger: app.logger.child({ component: 'scheduler' }),
      now: app.ctx.now,
      holder: holderName(),
      config,
      catalog: options.catalog ?? streamCatalog,
      ledgerFor: app.ledgerFor,
      dispatcher,
      shards: shardLeases(app.pool),
      planEveryTick: options.planEveryTick,
      onTick: (seconds) => metrics.ticks.observe(seconds),
      onDispatch: (job) => metrics.dispatches.inc({ source: job.source, resource: job.resource, purpose: job.purpose, reason: job.reason }),
    });
  } catch (err) {
    await queue.stop();
    await locks.close();
    throw err;
  }

  // Built before the reloader below; a refresh or run asking for a reload before it exists finds nothing new.
  let reloader: ConfigReloader | null = null;
  const reloadNow = async () => void (await reloader?.check());
  const webhooks = options.webhooks ? await options.webhooks(app, { queue, reload: reloadNow }) : null;
  let accepting = true;
  const readiness = readinessCheck(app.pool);
  const running = new Set<string>();
  const reads = metricsReads(app);
  const metrics = new Metrics({
    // Per-source gauges come from the replica that decides the source, whose views are fresh from its ticks;
    // the others would each re-read it at every scrape to report the same values.
    sources: () => {
      const config = current();
      const mine = config.sources.filter((s) => scheduler.decides(s.name));
      return mine.length > 0 ? sourceReadings(app, { ...config, sources: mine }, scheduler) : Promise.resolve([]);
    },
    runQueue: reads.runQueue,
    shards: () => scheduler.shardsHeld,
    running: () => [...running].map((key) => ({ source: key.slice(0, key.indexOf('/')), resource: key.slice(key.indexOf('/') + 1) })),
    webhooks: webhooks ? reads.webhooks : undefined,
    ready: async () => accepting && (await readiness()).ready,
    onCollectError: (err) => log.warn({ err }, 'a metric could not be read'),
  });
  metrics.watchDrift(reads.drift, (err) => log.warn({ err }, 'a metric could not be read'));
  metrics.watchQuarantine(reads.quarantine, (err) => log.warn({ err }, 'a metric could not be read'));

  // Per source, what stops its runs going here at their next page boundary when a reload removes it.
  const removal = new Map<string, AbortController>();
  await dispatcher.work(settings.concurrency, RUNS_PER_SOURCE, async (job) => {
    const key = `${job.source}/${job.resource}`;
    running.add(key);
    let removed = removal.get(job.source);
    if (!removed) removal.set(job.source, (removed = new AbortController()));
    try {
      await executeRun(
        {
          ctx: { ...app.ctx, locks, signal: AbortSignal.any([app.ctx.signal, removed.signal]) },
          config: current,
          reload: reloadNow,
          logger: app.logger,
          redactor: app.redactor,
          onRun: (j, result, seconds) => metrics.recordStream({ source: j.source, resource: j.resource, mode: j.purpose }, result, seconds),
        },
        job,
      );
    } finally {
      running.delete(key);
    }
  });

  const server = createServeHttp({
    accepting: () => accepting,
    readiness,
    metrics: () => metrics.render(),
    statusPage: async (query) =>
      renderStatusPage(await collectStatusPage(app, current(), scheduler, { source: query.get('source') ?? undefined })),
    webhooks: webhooks ? (req, res) => webhooks.handler(req, res) : undefined,
    // Read once: a new token needs a restart (src/config/diff.ts).
    statusToken: config.statusToken,
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
      // Names only: the token itself is never logged.
      bearerTokenRequiredOn: config.statusToken === undefined ? [] : PROTECTED_PATHS,
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
  await recordStreamTargets(app.pool, config);
  if (!options.manualTicks) scheduler.startTimer();

  const file = options.configFile;
  reloader = file
    ? new ConfigReloader({
        file: file.path,
        load: file.load,
        current,
        async apply(next) {
          const poll = app.config.serve.reloadSeconds;
          const was = app.config;
          // The scheduler checks the new plan first: a refusal leaves everything as it was.
          scheduler.applyConfig(next);
          app.applyConfig(next);
          await recordStreamTargets(app.pool, next);
          if (next.serve.reloadSeconds !== poll) reloader?.every(next.serve.reloadSeconds);
          // New credentials or a new address are a person's fix: the source's pause ends now, not at its backoff.
          for (const s of next.sources) {
            const before = was.sources.find((x) => x.name === s.name);
            if (!before || !changedSettings(before, s).some((k) => REACHING.has(k))) continue;
            if (await liftSourcePause(app.pool, s.name))
              log.info({ source: s.name }, 'its connection settings changed: its pause ends and its next run tries them');
          }
          // A source whose column policies or remaps changed: a stricter policy reaches what is stored now, not at its tables' next runs.
          const privacyChanged = next.sources.filter((s) => {
            const before = was.sources.find((x) => x.name === s.name);
            return before && changedSettings(before, s).some((k) => k === 'privacy' || k === 'columns');
          });
          if (privacyChanged.length > 0) await applyPolicies(app.pool, app.logger, privacyChanged, 'run');
          for (const [name, stop] of removal) {
            if (next.sources.some((s) => s.name === name)) continue;
            const going = [...running].filter((key) => key.startsWith(`${name}/`));
            if (going.length > 0)
              log.info({ source: name, running: going }, 'source removed: its runs here stop at their next page boundary');
            stop.abort();
            removal.delete(name);
          }
        },
        restartNotes: (next) =>
          options.webhooks && webhooks === null && next.sources.some((s) => s.kind === 'core')
            ? ['webhooks of core sources (this replica started with no core source, so it receives none)']
            : [],
        logger: app.logger,
      })
    : null;
  reloader?.every(serveSettings.reloadSeconds);

  // Retention (src/state/retention.ts): hourly, by the replica that decides the first shard, so a fleet purges once.
  const purge = setInterval(() => {
    if (!scheduler.deciding || !scheduler.decidesShard(0)) return;
    purgeRetention(app.pool, current()).then(
      (counts) => {
        const line = describePurge(counts);
        if (line) log.info({ ...counts }, line);
      },
      (err: unknown) => log.warn({ err }, 'the retention purge failed; it is tried again in an hour'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();

  let stopping: Promise<boolean> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      accepting = false;
      reloader?.stop();
      clearInterval(purge);
      const deadline = Date.now() + serveSettings.shutdownTimeoutSeconds * 1000;
      log.info({ timeoutSeconds: serveSettings.shutdownTimeoutSeconds, running: [...running] }, 'stopping: letting in-flight pages commit');
      const schedulerStopped = scheduler.stop();
      if (!app.abort.signal.aborted) app.abort.abort();
      server.close();
      server.closeIdleConnections();
      const drained = await within(
        dispatcher.stopWork().then(() => true),
        deadline - Date.now(),
      );
      await within(schedulerStopped, deadline - Date.now());
      if (webhooks) await within(webhooks.stop(), deadline - Date.now());
      await within(queue.stop(), deadline - Date.now());
      // The runs have stopped (or the deadline passed): their locks go with the session.
      await within(locks.close(), deadline - Date.now());
      server.closeAllConnections();
      if (drained) log.info('stopped');
      else
        log.error(
          { running: [...running] },
          'shutdown timeout reached with runs still going; their checkpoints are saved and the next run resumes them',
        );
      return drained === true;
    })());

  const reload = async (o: { force?: boolean } = {}) => (reloader ? reloader.check(o) : ('unchanged' as const));
  return { url, port: address.port, server, scheduler, queue, dispatcher, metrics, running: () => [...running], reload, stop };
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
