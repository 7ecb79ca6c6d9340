/**
 * The composition root: builds every dependency once from the configuration
 * and hands them to commands. Nothing else in pmsync constructs a pool, a
 * client or a logger.
 *
 * A running `serve` may take a new configuration (applyConfig). The pool, the
 * logger and the database stay; what is built per source (its HTTP client and
 * quota ledger) is looked up by the source's settings, so a source whose
 * settings or credentials changed gets new ones at its next run while a run
 * in progress ends with those it started with.
 */
import { createHash } from 'node:crypto';
import { basicValue, HttpClient, proAuth, restAuth } from './api/http.ts';
import { LimiterRegistry } from './api/limiter.ts';
import { insecureHttpHost } from './config/insecure-http.ts';
import { UNLIMITED, type Config, type RetryPolicy, type SourceConfig } from './config/schema.ts';
import { applyStatements, existingRelations, grantStatements, roleInfo } from './db/access.ts';
import { EMBEDDED_PASSWORD, startEmbedded, type EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { checkConnection, createPool, type Pool } from './db/pool.ts';
import { createLogger, type LogDestination, type Logger } from './log.ts';
import { Redactor } from './redact.ts';
import { listGrants, type AccessGrant } from './state/access-grants.ts';
import { keyFingerprint, QuotaLedger, type QuotaSettings } from './state/quota.ts';
import { allResourceTables } from './sync/streams/index.ts';
import type { SyncContext } from './sync/context.ts';

export interface App {
  /** The configuration in force (a reload replaces it). */
  readonly config: Config;
  pool: Pool;
  logger: Logger;
  redactor: Redactor;
  databaseUrl: string;
  embedded: EmbeddedDatabase | null;
  ctx: SyncContext;
  abort: AbortController;
  ledgerFor(source: SourceConfig): QuotaLedger;
  /**
   * Puts a new configuration in force: its secrets are registered with the
   * redactor and changed limiter settings applied. Settings that need a
   * restart are the caller's to keep (src/serve/reload.ts).
   */
  applyConfig(next: Config): void;
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
  addSecrets(redactor, config);
  return redactor;
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\./.test(host);
}

function addSecrets(redactor: Redactor, config: Config): void {
  for (const s of config.sources) {
    if (s.kind === 'pro') redactor.add(s.token);
    else redactor.add(s.apikey, s.password, basicValue(s.username, s.password));
    if (s.privacy?.key) redactor.add(s.privacy.key);
  }
  redactor.add(config.statusToken);
  for (const url of [config.databaseUrl, config.redisUrl]) {
    if (!url) continue;
    try {
      const parsed = new URL(url);
      const password = decodeURIComponent(parsed.password);
      // The embedded database's password is a documented constant of a store that listens on loopback only, not a
      // secret; it is also the program's name, which masking would turn into "[REDACTED]" in every message.
      if (url === config.databaseUrl && password === EMBEDDED_PASSWORD && isLoopbackHost(parsed.hostname)) continue;
      redactor.add(password);
    } catch {
      // an invalid URL was already reported by the config loader
    }
  }
}

/**
 * Says, once per source and host, that a source's API is reached in plain
 * http across a network because its configuration accepts it
 * (`allowInsecureHttp`); a reload that brings a new such source says it for that one.
 */
function insecureHttpWarner(logger: Logger): (config: Config) => void {
  const warned = new Set<string>();
  return (config) => {
    for (const s of config.sources) {
      const host = insecureHttpHost(s.baseUrl);
      if (!host || !s.allowInsecureHttp || warned.has(`${s.name} ${host}`)) continue;
      warned.add(`${s.name} ${host}`);
      logger.warn(
        { source: s.name, host },
        `source "${s.name}" reaches its API at ${host} in plain http, as its configuration allows (allowInsecureHttp): the API credentials and patient data cross the network unencrypted`,
      );
    }
  };
}

/** Identifies one version of a source's settings (secrets included, hashed). */
function settingsKey(source: SourceConfig): string {
  return `${source.name}:${createHash('sha256').update(JSON.stringify(source)).digest('hex')}`;
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

/**
 * Re-applies every `pmsync grant` (src/db/access.ts), so tables a migration
 * added get the same privileges and row-level policies at once.
 */
export async function reapplyGrants(pool: Pool): Promise<number> {
  const grants = await listGrants(pool);
  if (grants.length === 0) return 0;
  const relations = await existingRelations(pool, allResourceTables());
  const present: AccessGrant[] = [];
  for (const g of grants) if ((await roleInfo(pool, g.role)).exists) present.push(g);
  await applyStatements(
    pool,
    present.flatMap((g) => grantStatements(g.role, g.sources, relations)),
  );
  return present.length;
}

export async function openApp(config: Config, options: OpenOptions = {}): Promise<App> {
  const redactor = redactorFor(config);
  const color =
    options.logColor ?? (config.logFormat === 'pretty' && !options.logDestination && process.stderr.isTTY && !process.env.NO_COLOR);
  const logger = createLogger(redactor, { level: config.logLevel, destination: options.logDestination, format: config.logFormat, color });
  const warnInsecureHttp = insecureHttpWarner(logger);
  warnInsecureHttp(config);
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
      if (result.applied.length > 0) {
        logger.info({ applied: result.applied }, 'migrations applied');
        const regranted = await reapplyGrants(pool);
        if (regranted > 0) logger.info({ roles: regranted }, 'read grants re-applied to the migrated tables');
      }
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }

  const now = options.now ?? (() => new Date());
  const limiters = new LimiterRegistry(config.redisUrl);
  // By source name and settings: a changed source gets new ones, and a run still going keeps its own.
  const clients = new Map<string, HttpClient>();
  const ledgers = new Map<string, QuotaLedger>();
  const abort = new AbortController();
  let current = config;

  const ledgerFor = (source: SourceConfig): QuotaLedger => {
    const settings = quotaSettingsFor(source);
    const key = JSON.stringify(settings);
    let ledger = ledgers.get(key);
    if (!ledger) {
      ledger = new QuotaLedger(pool, settings, now);
      ledgers.set(key, ledger);
    }
    return ledger;
  };

  const clientFor = (source: SourceConfig): HttpClient => {
    const key = settingsKey(source);
    let client = clients.get(key);
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
      clients.set(key, client);
    }
    return client;
  };

  const ctx: SyncContext = { pool, logger, now, signal: abort.signal, databaseUrl, clientFor };
  return {
    get config() {
      return current;
    },
    pool,
    logger,
    redactor,
    databaseUrl,
    embedded,
    ctx,
    abort,
    ledgerFor,
    applyConfig(next) {
      addSecrets(redactor, next);
      warnInsecureHttp(next);
      const updated = new Set<string>();
      // Sources sharing a key share its limiter: the first of them in the file sets it.
      for (const s of next.sources) {
        const keyId = quotaSettingsFor(s).keyId;
        if (!updated.has(keyId)) limiters.update(keyId, s.limiter);
        updated.add(keyId);
      }
      current = next;
    },
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
