/**
 * Configuration: one zod schema, parsed once at start-up. Every problem is
 * collected and reported together in one ConfigError.
 *
 * Sources come from a JSON config file (`--config` or PMSYNC_CONFIG), or, for a
 * single Core account, from CORE_* environment variables. Secret values in the
 * file may be written as `{ "env": "NAME" }` so the file itself holds none.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from './errors.ts';
import { DEFAULT_RETRY } from './api/http.ts';
import { isValidTimeZone } from './sync/window.ts';
import { parseServeSettings, type ScheduleSettings, type ServeSettings } from './scheduler/settings.ts';
import { parseWebhookSettings, type WebhookSettings } from './webhooks/settings.ts';

/** The standard plan's daily request budget per gateway key. */
export const DEFAULT_DAILY_QUOTA = 1000;
/** Core/Subset maximum page size; larger Rows values are clamped by the server. */
export const MAX_ROWS = 100;
/**
 * Re-read this much before the cursor on every incremental window. The spec does
 * not say how the server stamps ModifiedOn (clock, commit time, second
 * precision), so a record stamped shortly before the previous window ended but
 * committed after it was read is still caught.
 */
export const DEFAULT_OVERLAP_SECONDS = 600;
/** Windows end this far before the run start, so records being written now are not half-seen. */
export const DEFAULT_LAG_SECONDS = 60;
/** Share of the daily quota kept for webhook refreshes and on-demand resyncs. */
export const DEFAULT_RESERVE_PERCENT = 10;

const timeZone = z.string().refine(isValidTimeZone, 'not a known IANA time zone (e.g. UTC, America/New_York)');
const secret = z.union([z.string().min(1), z.object({ env: z.string().min(1) })]);
const sourceName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'use lowercase letters, digits, "-" or "_"');

const quota = z
  .object({
    reservePercent: z.number().min(0).max(90).default(DEFAULT_RESERVE_PERCENT),
    /** Time zone in which the quota day resets. The spec does not say; UTC midnight is assumed. */
    timeZone: timeZone.default('UTC'),
    resetHour: z.number().int().min(0).max(23).default(0),
  })
  .prefault({});

const limiter = z
  .object({
    maxConcurrent: z.number().int().min(1).max(16).default(2),
    minTimeMs: z.number().int().min(0).default(0),
  })
  .prefault({});

/** Retries of 5xx answers, timeouts and resets: full-jitter exponential backoff (see src/api/http.ts). */
const retry = z
  .object({
    maxAttempts: z.number().int().min(1).max(20).default(DEFAULT_RETRY.maxAttempts),
    baseDelayMs: z.number().int().min(0).default(DEFAULT_RETRY.baseDelayMs),
    maxDelayMs: z.number().int().min(0).default(DEFAULT_RETRY.maxDelayMs),
    maxElapsedMs: z.number().int().min(0).default(DEFAULT_RETRY.maxElapsedMs),
  })
  .optional();

const restFields = {
  name: sourceName,
  baseUrl: z.string(),
  apikey: secret,
  username: z.string().min(1),
  password: secret,
  /** Send the Basic value as the api_key query parameter instead of the Authorization header. */
  credentialsIn: z.enum(['header', 'query']).default('header'),
  dailyQuota: z.number().int().min(1).default(DEFAULT_DAILY_QUOTA),
  quota,
  limiter,
  /** Time zone of ModifiedOn filter values. The spec does not say; UTC is assumed. */
  timeZone: timeZone.default('UTC'),
  overlapSeconds: z.number().int().min(0).default(DEFAULT_OVERLAP_SECONDS),
  lagSeconds: z.number().int().min(0).default(DEFAULT_LAG_SECONDS),
  requestTimeoutMs: z.number().int().min(1000).default(30_000),
  retry,
  /** Resources to sync; all of the kind's streams when omitted. */
  streams: z.array(z.string()).optional(),
  /** Streams whose server ignores ModifiedOn filters can be switched to full refresh. */
  fullRefresh: z.array(z.string()).default([]),
  appointments: z
    .object({
      /** First appointment date to read (YYYY-MM-DD). */
      historyStart: z.iso.date().default('2000-01-01'),
      /** How far ahead of today booked appointments are read. */
      horizonDays: z.number().int().min(0).max(3650).default(365),
    })
    .prefault({}),
  webhook: z
    .object({
      /** Expected TenantId on deliveries; checked when set. */
      tenantId: z.string().optional(),
      /** How long the old secret token is still accepted after a rotation (default 3600, see docs/webhooks.md). */
      secretGraceSeconds: z
        .number()
        .int()
        .min(0)
        .max(30 * 86_400)
        .optional(),
    })
    .prefault({}),
};

const coreSource = z.object({ kind: z.literal('core'), ...restFields });
const subsetSource = z.object({ kind: z.literal('subset'), ...restFields });
/** Limit sent on Pro list calls. The spec shows no maximum; 100 is the Core/Subset maximum (see docs/pro-and-subset.md). */
export const PRO_PAGE_LIMIT = 100;
/** Re-read a full sweep of every patient's appointments at least this often (hours). */
export const PRO_APPOINTMENT_SWEEP_HOURS = 24;
/** Availability snapshots are taken at most this often (minutes). */
export const PRO_AVAILABILITY_INTERVAL_MINUTES = 60;

const proSource = z.object({
  kind: z.literal('pro'),
  name: sourceName,
  baseUrl: z.string(),
  practiceId: z.number().int().positive(),
  token: secret,
  /** Limit sent on Pro list calls; the spec does not show a maximum. */
  pageLimit: z.number().int().min(1).max(1000).default(PRO_PAGE_LIMIT),
  /** Parallel per-patient appointment requests (and per-provider slot requests). */
  concurrency: z.number().int().min(1).max(32).default(4),
  /** Requests in flight are bounded by both this limiter and `concurrency`; its default matches `concurrency`'s. */
  limiter: z
    .object({
      maxConcurrent: z.number().int().min(1).max(32).default(4),
      minTimeMs: z.number().int().min(0).default(0),
    })
    .prefault({}),
  requestTimeoutMs: z.number().int().min(1000).default(30_000),
  streams: z.array(z.string()).optional(),
  appointments: z
    .object({
      /**
       * Between full sweeps only patients that are new or changed are re-read;
       * every this many hours all of them are (0: every run).
       */
      fullSweepHours: z
        .number()
        .min(0)
        .max(24 * 90)
        .default(PRO_APPOINTMENT_SWEEP_HOURS),
    })
    .prefault({}),
  /**
   * Waitlist entries to read besides those named by waitlist slots: the API has
   * no list of waitlist entries, only GET /waitlist/{waitlistId}.
   */
  waitlistIds: z.array(z.number().int().positive()).default([]),
  availability: z
    .object({
      horizonDays: z.number().int().min(1).max(365).default(14),
      /** A run takes a new snapshot only when the last one is at least this old. */
      minIntervalMinutes: z.number().int().min(0).default(PRO_AVAILABILITY_INTERVAL_MINUTES),
    })
    .prefault({}),
});

const sourceSchema = z.discriminatedUnion('kind', [coreSource, subsetSource, proSource]);

const fileSchema = z.object({
  databaseUrl: z.string().optional(),
  sources: z.array(sourceSchema).default([]),
});

type SecretKey = 'apikey' | 'password' | 'token';
type Resolved<T> = { [K in keyof T]: K extends SecretKey ? string : T[K] };
export type CoreSourceConfig = Resolved<z.infer<typeof coreSource>>;
export type SubsetSourceConfig = Resolved<z.infer<typeof subsetSource>>;
export type ProSourceConfig = Resolved<z.infer<typeof proSource>>;
export type RestSourceConfig = CoreSourceConfig | SubsetSourceConfig;
export type SourceConfig = RestSourceConfig | ProSourceConfig;

export interface Config {
  /** Undefined means: use the embedded PostgreSQL. */
  databaseUrl: string | undefined;
  /** Folder of the embedded PostgreSQL data and other local state. */
  dataDir: string;
  logLevel: string;
  redisUrl: string | undefined;
  sources: SourceConfig[];
  /** Cron schedules of `pmsync serve` (always set by loadConfig). */
  schedules?: ScheduleSettings;
  /** HTTP port, shutdown and lock-wait settings of `serve` and `resync` (always set by loadConfig). */
  serve?: ServeSettings;
  /** Webhook receiver and refresh queue settings (always set by loadConfig). */
  webhooks?: WebhookSettings;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  configFile?: string;
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.test(hostname);
}

/** Reads and validates the whole configuration, listing every problem at once. */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const configFile = options.configFile ?? env.PMSYNC_CONFIG;

  let fileInput: unknown = {};
  if (configFile) {
    try {
      fileInput = JSON.parse(readFileSync(configFile, 'utf8'));
    } catch (err) {
      problems.push(`config file ${configFile}: ${(err as Error).message}`);
    }
  }

  const parsed = fileSchema.safeParse(fileInput);
  let sources: SourceConfig[];
  let databaseUrl = env.DATABASE_URL || undefined;
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${configFile ?? 'config'}: ${formatPath(issue.path)}: ${issue.message}`);
    sources = salvageSources(fileInput, env, problems);
  } else {
    databaseUrl ??= parsed.data.databaseUrl;
    sources = parsed.data.sources.map((s, i) => resolveSecrets(s, `sources[${i}]`, env, problems) as SourceConfig);
  }

  const webhooks = parseWebhookSettings(fileInput, configFile ?? 'config', problems);

  const { schedules, serve } = parseServeSettings(fileInput, env, configFile ?? 'config', problems);

  if (env.CORE_BASE_URL || env.CORE_APIKEY || env.CORE_USERNAME) {
    const fromEnv = coreSource.safeParse({
      kind: 'core',
      name: env.CORE_SOURCE_NAME ?? 'core',
      baseUrl: env.CORE_BASE_URL,
      apikey: env.CORE_APIKEY,
      username: env.CORE_USERNAME,
      password: env.CORE_PASSWORD,
      dailyQuota: env.CORE_DAILY_QUOTA === undefined ? undefined : Number(env.CORE_DAILY_QUOTA),
      timeZone: env.CORE_TIME_ZONE,
    });
    if (fromEnv.success) sources.push(fromEnv.data as CoreSourceConfig);
    else for (const issue of fromEnv.error.issues) problems.push(`environment: ${envName(issue.path)}: ${issue.message}`);
  }

  const seen = new Set<string>();
  sources.forEach((s, i) => {
    const where = `source "${s.name}" (sources[${i}])`;
    if (seen.has(s.name)) problems.push(`${where}: the name is used twice`);
    seen.add(s.name);
    problems.push(...checkSource(s).map((p) => `${where}: ${p}`));
  });

  if (databaseUrl) {
    try {
      const u = new URL(databaseUrl);
      if (!/^postgres(ql)?:$/.test(u.protocol)) problems.push('DATABASE_URL: must start with postgres:// or postgresql://');
    } catch {
      problems.push('DATABASE_URL: not a valid URL (expected postgres://user:password@host:5432/db)');
    }
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    databaseUrl,
    dataDir: env.PMSYNC_DATA_DIR ?? '.pmsync',
    logLevel: env.LOG_LEVEL ?? 'info',
    redisUrl: env.REDIS_URL || undefined,
    sources,
    schedules,
    serve,
    webhooks,
  };
}

function checkSource(s: SourceConfig): string[] {
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(s.baseUrl);
  } catch {
    problems.push(`baseUrl "${s.baseUrl}" is not an absolute URL`);
  }
  if (url) {
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
      problems.push('baseUrl must use https:// (plain http is allowed only for localhost)');
    }
    if (url.search || url.username || url.password) problems.push('baseUrl must not carry a query string or credentials');
    const path = url.pathname.replace(/\/+$/, '');
    if (s.kind === 'core' && !/\/api\/v1$/.test(path)) problems.push('a core baseUrl ends in /api/v1 (e.g. https://host/api/v1)');
    if (s.kind === 'core' && /\/CustomAPI\//i.test(path))
      problems.push('this baseUrl is a Subset API path (/CustomAPI/...): set kind to "subset"');
    if (s.kind === 'pro' && /\/practices(\/|$)/.test(path)) {
      problems.push('a pro baseUrl stops before /practices: pmsync adds /practices/<practiceId> itself');
    }
    if (s.kind === 'subset' && !/\/CustomAPI\/[^/]+\/api\/v1$/.test(path)) {
      problems.push('a subset baseUrl ends in /CustomAPI/<SUBSET_NAME>/api/v1');
    }
  }
  if (s.kind !== 'pro' && s.username.includes(':')) problems.push('username must not contain ":" (HTTP Basic cannot carry it)');
  // The Pro token travels bare in Authorization; a scheme word in front of it is refused by the API.
  if (s.kind === 'pro' && /^\s*(bearer|basic|token)\s+\S/i.test(s.token)) {
    problems.push('token is sent bare in the Authorization header: write the token alone, without a scheme word such as "Bearer"');
  }
  return problems;
}

/**
 * When the file fails its schema, the source entries are still checked one by
 * one (secrets from the environment, URLs, usernames), so a single run lists
 * every problem instead of the first layer of them. Entries that pass are
 * returned for the checks that follow.
 */
function salvageSources(fileInput: unknown, env: NodeJS.ProcessEnv, problems: string[]): SourceConfig[] {
  const entries = (fileInput as { sources?: unknown } | null)?.sources;
  if (!Array.isArray(entries)) return [];
  const valid: SourceConfig[] = [];
  entries.forEach((entry, i) => {
    if (!entry || typeof entry !== 'object') return;
    const resolved = resolveSecrets(entry as Record<string, unknown>, `sources[${i}]`, env, problems);
    const one = sourceSchema.safeParse(resolved);
    if (one.success) {
      valid.push(resolveSecrets(one.data, `sources[${i}]`, env, []) as SourceConfig);
      return;
    }
    const raw = resolved as { name?: unknown; kind?: unknown; baseUrl?: unknown; username?: unknown };
    if (typeof raw.baseUrl === 'string' && (raw.kind === 'pro' || typeof raw.username === 'string')) {
      const where = `source "${typeof raw.name === 'string' ? raw.name : '?'}" (sources[${i}])`;
      problems.push(...checkSource(raw as SourceConfig).map((p) => `${where}: ${p}`));
    }
  });
  return valid;
}

function resolveSecrets(
  source: Record<string, unknown>,
  where: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...source };
  for (const key of ['apikey', 'password', 'token']) {
    const v = out[key];
    if (v && typeof v === 'object' && 'env' in v) {
      const name = (v as { env: string }).env;
      const value = env[name];
      if (!value) problems.push(`${where}.${key}: environment variable ${name} is not set`);
      out[key] = value ?? '';
    }
  }
  return out;
}

function formatPath(path: PropertyKey[]): string {
  return (
    path
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
      .join('')
      .replace(/^\./, '') || '(root)'
  );
}

const ENV_NAMES: Record<string, string> = {
  baseUrl: 'CORE_BASE_URL',
  apikey: 'CORE_APIKEY',
  username: 'CORE_USERNAME',
  password: 'CORE_PASSWORD',
  dailyQuota: 'CORE_DAILY_QUOTA',
  timeZone: 'CORE_TIME_ZONE',
  name: 'CORE_SOURCE_NAME',
};

function envName(path: PropertyKey[]): string {
  return ENV_NAMES[String(path[0])] ?? formatPath(path);
}

export function findSource(config: Config, name: string | undefined): SourceConfig[] {
  if (!name) return config.sources;
  const s = config.sources.find((x) => x.name === name);
  if (!s) {
    const known = config.sources.map((x) => x.name).join(', ') || 'none configured';
    throw new ConfigError([`--source ${name}: no such source (known: ${known})`]);
  }
  return [s];
}
