/**
 * The composition root: builds every dependency once from the configuration
 * and hands them to commands. Nothing else in pmsync constructs a pool, a
 * client or a logger.
 */
import { basicValue, HttpClient, proAuth, restAuth } from './api/http.ts';
import { LimiterRegistry } from './api/limiter.ts';
import type { Config, SourceConfig } from './config-schema.ts';
import { startEmbedded, type EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { checkConnection, createPool, type Pool } from './db/pool.ts';
import { createLogger, type LogDestination, type Logger } from './log.ts';
import { Redactor } from './redact.ts';
import { keyFingerprint, QuotaLedger, UNLIMITED, type QuotaSettings } from './state/quota.ts';
import type { SyncContext } from './sync/context.ts';
import type { RetryPolicy } from './api/http.ts';

export interface App {
  config: Config;
  pool: Pool;
  logger: Logger;
  redactor: Redactor;
  databaseUrl: string;
  embedded: EmbeddedDatabase | null;
  ctx: SyncContext;
  abort: AbortController;
  ledgerFor(source: SourceConfig): QuotaLedger;
  close(): Promise<void>;
}

export interface OpenOptions {
  migrate?: boolean;
  now?: () => Date;
  /** Where log lines go (stderr unless set). */
  logDestination?: LogDestination;
  /** Colour the level of pretty log lines (default: when they go to a terminal's stderr). */
  logColor?: boolean;
  retry?: RetryPolicy;
}

export function redactorFor(config: Config): Redactor {
  const redactor = new Redactor();
  for (const s of config.sources) {
    if (s.kind === 'pro') redactor.add(s.token);
    else redactor.add(s.apikey, s.password, basicValue(s.username, s.password));
  }
  for (const url of [config.databaseUrl, config.redisUrl]) {
    if (!url) continue;
    try {
      redactor.add(decodeURIComponent(new URL(url).password));
    } catch {
      // an invalid URL was already reported by the config loader
    }
  }
  return redactor;
}

export function quotaSettingsFor(source: SourceConfig): QuotaSettings {
  if (source.kind === 'pro') {
    return {
      keyId: keyFingerprint(`pro:${source.token}`),
      // Pro shows no quota: its requests are still counted, against no limit.
      dailyLimit: UNLIMITED,
      reservePercent: 0,
      budget: source.budget,
      timeZone: 'UTC',
      resetHour: 0,
      label: `source "${source.name}"`,
    };
  }
  return {
    keyId: keyFingerprint(source.apikey),
    dailyLimit: source.dailyQuota,
    reservePercent: source.quota.reservePercent,
    budget: source.budget,
    timeZone: source.quota.timeZone,
    resetHour: source.quota.resetHour,
    label: `source "${source.name}"`,
  };
}

export async function openApp(config: Config, options: OpenOptions = {}): Promise<App> {
  const redactor = redactorFor(config);
  const color =
    options.logColor ?? (config.logFormat === 'pretty' && !options.logDestination && process.stderr.isTTY && !process.env.NO_COLOR);
  const logger = createLogger(redactor, { level: config.logLevel, destination: options.logDestination, format: config.logFormat, color });
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbedded({ dataDir: config.dataDir });
    databaseUrl = embedded.connectionString;
    logger.info(
      { databaseUrl, ownerPid: embedded.owned ? process.pid : embedded.owner() },
      embedded.owned
        ? 'no DATABASE_URL set: using the embedded PostgreSQL'
        : 'no DATABASE_URL set: using the embedded PostgreSQL another pmsync process runs',
    );
  }
  const pool = createPool(databaseUrl);
  try {
    await checkConnection(pool, databaseUrl);
    if (options.migrate !== false) {
      const result = await migrate(pool);
      if (result.applied.length > 0) logger.info({ applied: result.applied }, 'migrations applied');
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }

  const now = options.now ?? (() => new Date());
  const limiters = new LimiterRegistry(config.redisUrl);
  const clients = new Map<string, HttpClient>();
  const ledgers = new Map<string, QuotaLedger>();
  const abort = new AbortController();

  const ledgerFor = (source: SourceConfig): QuotaLedger => {
    let ledger = ledgers.get(source.name);
    if (!ledger) {
      ledger = new QuotaLedger(pool, quotaSettingsFor(source), now);
      ledgers.set(source.name, ledger);
    }
    return ledger;
  };

  const clientFor = (source: SourceConfig): HttpClient => {
    let client = clients.get(source.name);
    if (!client) {
      const settings = quotaSettingsFor(source);
      const limiter = limiters.get(settings.keyId, source.limiter);
      client = new HttpClient({
        sourceName: source.name,
        baseUrl: source.baseUrl,
        auth: source.kind === 'pro' ? proAuth(source) : restAuth(source),
        budget: ledgerFor(source),
        schedule: (fn) => limiter.schedule(fn),
        redactor,
        logger,
        timeoutMs: source.requestTimeoutMs,
        maxResponseBytes: source.maxResponseBytes,
        retry: options.retry ?? (source.kind === 'pro' ? undefined : source.retry),
      });
      clients.set(source.name, client);
    }
    return client;
  };

  const ctx: SyncContext = { pool, logger, now, signal: abort.signal, databaseUrl, clientFor };
  return {
    config,
    pool,
    logger,
    redactor,
    databaseUrl,
    embedded,
    ctx,
    abort,
    ledgerFor,
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
      await limiters.close();
      await pool.end();
      if (embedded && (await embedded.stop()) === 'left running' && embedded.owner() === null) {
        logger.info('the embedded PostgreSQL is left running: other clients are connected, and the next pmsync process adopts it');
      }
    },
  };
}
