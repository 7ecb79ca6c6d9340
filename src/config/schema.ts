/**
 * The shape of pmsync's configuration: the source schemas and their defaults,
 * and the types every part of pmsync reads. Reading it from the file or the
 * environment is load.ts; the checks no schema can make are checks.ts.
 */
import { z } from 'zod';
import type { LogFormat } from '../log-format.ts';
import { strictObject } from '../strict-schema.ts';
import { isValidTimeZone } from '../time.ts';
import { parseHours } from './hours.ts';
import type { PrivacySettings } from './privacy.ts';
import { budgetValue, type ScheduleSettings, type ServeSettings } from './schedules.ts';
import type { WebhookSettings } from './webhooks.ts';

/** Default seconds between progress lines of a running stream (PMSYNC_PROGRESS_SECONDS). */
export const DEFAULT_PROGRESS_SECONDS = 30;
/** The standard plan's daily request budget per gateway key. */
export const DEFAULT_DAILY_QUOTA = 1000;
/** A limit or budget with no bound: Pro shows no quota, and a Pro budget is unlimited unless set. */
export const UNLIMITED = 2_147_483_647;
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
/**
 * Largest response body read. A page of 100 records is a few hundred KB; a
 * body past this is cut off, reported and not retried (the same request would
 * only download it again).
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

const timeZone = z.string().refine(isValidTimeZone, 'not a known IANA time zone (e.g. UTC, America/New_York)');
/** Opening hours: each entry days and a range of times (./hours.ts, parseHours). */
const openingHours = z
  .array(z.string())
  .min(1, 'state at least one range, e.g. ["Mon-Fri 08:00-19:00"], or leave hours out')
  .superRefine((entries, ctx) => {
    for (const problem of parseHours(entries).problems) ctx.addIssue({ code: 'custom', message: problem });
  })
  .optional();
/** Largest response body a source may send (see DEFAULT_MAX_RESPONSE_BYTES). */
const maxResponseBytes = z
  .number()
  .int()
  .min(64 * 1024)
  .max(1024 * 1024 * 1024)
  .default(DEFAULT_MAX_RESPONSE_BYTES);
/**
 * A secret: the value itself, `{ "env": "NAME" }` (read once, when the process
 * starts, as environment variables cannot change in a running process), or
 * `{ "file": "/path" }` (read at every load of the configuration, so a mounted
 * secret that is rotated reaches a running `serve` at its next reload).
 */
const secret = z.union([z.string().min(1), strictObject({ env: z.string().min(1) }), strictObject({ file: z.string().min(1) })], {
  error: 'write the value, { "env": "VARIABLE" } or { "file": "/path/of/a/file" }',
});
const sourceName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'use lowercase letters, digits, "-" or "_"');
/**
 * Accept a plain http:// baseUrl (and webhook receiver URL) to a host other
 * than this machine: credentials and patient data then cross the network
 * unencrypted, so it is refused unless a source says so, and warned about.
 */
const allowInsecureHttp = z.boolean().optional();

const quota = strictObject({
  reservePercent: z.number().min(0).max(90).default(DEFAULT_RESERVE_PERCENT),
  /** Time zone in which the quota day resets. The spec does not say; UTC midnight is assumed. */
  timeZone: timeZone.default('UTC'),
  resetHour: z.number().int().min(0).max(23).default(0),
}).prefault({});

const limiter = strictObject({
  maxConcurrent: z.number().int().min(1).max(16).default(2),
  minTimeMs: z.number().int().min(0).default(0),
}).prefault({});

export interface RetryPolicy {
  /** Attempts per request, the first included. */
  maxAttempts: number;
  /** Backoff before retry n is drawn from [0, min(maxDelayMs, baseDelayMs * 2^(n-1))) ("full jitter"). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry starts later than this after the first attempt; a Retry-After reaching past it ends the request. */
  maxElapsedMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000, maxElapsedMs: 120_000 };

/** Retries of 5xx answers, timeouts and resets: full-jitter exponential backoff (see src/api/http.ts). */
const retry = strictObject({
  maxAttempts: z.number().int().min(1).max(20).default(DEFAULT_RETRY.maxAttempts),
  baseDelayMs: z.number().int().min(0).default(DEFAULT_RETRY.baseDelayMs),
  maxDelayMs: z.number().int().min(0).default(DEFAULT_RETRY.maxDelayMs),
  maxElapsedMs: z.number().int().min(0).default(DEFAULT_RETRY.maxElapsedMs),
}).optional();

/**
 * Typed columns read from another raw field than pmsync's default, for a
 * server that names a field differently: `{ "appointments.start_at": "StartTime" }`.
 * Checked against the streams' columns at start-up (src/sync/table-settings.ts).
 */
const tableColumns = z.record(z.string(), z.string().min(1, 'name the raw field to read')).default({});
/** Tables that keep `<table>_history` versions (history mode). */
const historyTables = z.array(z.string()).default([]);
/**
 * Column policies (privacy.ts): at the top level for every
 * source, and per source over the top level's. Names and policies are checked
 * against the streams at start-up (src/sync/privacy.ts).
 */
const privacy = strictObject({
  key: secret.optional(),
  columns: z
    .union([z.string(), z.record(z.string(), z.string())], { error: 'write a map of columns to policies, or "personal:<policy>"' })
    .optional(),
  raw: z.enum(['all', 'declared']).optional(),
}).optional();

const restFields = {
  name: sourceName,
  baseUrl: z.string(),
  allowInsecureHttp,
  apikey: secret,
  username: z.string().min(1),
  password: secret,
  /** Send the Basic value as the api_key query parameter instead of the Authorization header. */
  credentialsIn: z.enum(['header', 'query']).default('header'),
  dailyQuota: z.number().int().min(1).default(DEFAULT_DAILY_QUOTA),
  /**
   * Requests a quota day that scheduled checks, webhook-triggered fetches and
   * full refreshes may spend together: a number, or a share of dailyQuota
   * ("15%"). schedules.budget when omitted.
   */
  budget: budgetValue.optional(),
  quota,
  limiter,
  /** Time zone of ModifiedOn filter values. The spec does not say; UTC is assumed. */
  timeZone: timeZone.default('UTC'),
  /**
   * The practice's opening hours in `timeZone` (["Mon-Fri 08:00-19:00", "Sat
   * 09:00-13:00"]): the budget scheduler plans by them until the practice's own
   * changes show its hours (src/scheduler/hours.ts).
   */
  hours: openingHours,
  overlapSeconds: z.number().int().min(0).default(DEFAULT_OVERLAP_SECONDS),
  lagSeconds: z.number().int().min(0).default(DEFAULT_LAG_SECONDS),
  requestTimeoutMs: z.number().int().min(1000).default(30_000),
  maxResponseBytes,
  retry,
  /** Resources to sync; all of the kind's streams when omitted. */
  streams: z.array(z.string()).optional(),
  /** Streams whose server ignores ModifiedOn filters can be switched to full refresh. */
  fullRefresh: z.array(z.string()).default([]),
  columns: tableColumns,
  history: historyTables,
  privacy,
  appointments: strictObject({
    /** First appointment date to read (YYYY-MM-DD). */
    historyStart: z.iso.date().default('2000-01-01'),
    /** How far ahead of today booked appointments are read. */
    horizonDays: z.number().int().min(0).max(3650).default(365),
  }).prefault({}),
  webhook: strictObject({
    /** Expected TenantId on deliveries; checked when set. */
    tenantId: z.string().optional(),
    /** How long the old secret token is still accepted after a rotation (default 3600, see docs/webhooks.md). */
    secretGraceSeconds: z
      .number()
      .int()
      .min(0)
      .max(30 * 86_400)
      .optional(),
  }).prefault({}),
};

export const coreSource = strictObject({ kind: z.literal('core'), ...restFields });
const subsetSource = strictObject({ kind: z.literal('subset'), ...restFields });
/** Limit sent on Pro list calls. The spec shows no maximum; 100 is the Core/Subset maximum (see docs/pro-and-subset.md). */
export const PRO_PAGE_LIMIT = 100;
/** Re-read a full sweep of every patient's appointments at least this often (hours). */
export const PRO_APPOINTMENT_SWEEP_HOURS = 24;
/** Availability snapshots are taken at most this often (minutes). */
export const PRO_AVAILABILITY_INTERVAL_MINUTES = 60;

const proSource = strictObject({
  kind: z.literal('pro'),
  name: sourceName,
  baseUrl: z.string(),
  allowInsecureHttp,
  practiceId: z.number().int().positive(),
  token: secret,
  /** Limit sent on Pro list calls; the spec does not show a maximum. */
  pageLimit: z.number().int().min(1).max(1000).default(PRO_PAGE_LIMIT),
  /** Parallel per-patient appointment requests (and per-provider slot requests). */
  concurrency: z.number().int().min(1).max(32).default(4),
  /** Requests in flight are bounded by both this limiter and `concurrency`; its default matches `concurrency`'s. */
  limiter: strictObject({
    maxConcurrent: z.number().int().min(1).max(32).default(4),
    minTimeMs: z.number().int().min(0).default(0),
  }).prefault({}),
  requestTimeoutMs: z.number().int().min(1000).default(30_000),
  /**
   * Requests a day scheduled checks may spend. The Pro API shows no quota, so
   * there is no limit unless one is set here; checks are still made only where
   * changes are expected (see docs/operations.md).
   */
  budget: z.number().int().min(0).optional(),
  maxResponseBytes,
  streams: z.array(z.string()).optional(),
  columns: tableColumns,
  history: historyTables,
  privacy,
  appointments: strictObject({
    /**
     * Between full sweeps only patients that are new or changed are re-read;
     * every this many hours all of them are (0: every run).
     */
    fullSweepHours: z
      .number()
      .min(0)
      .max(24 * 90)
      .default(PRO_APPOINTMENT_SWEEP_HOURS),
  }).prefault({}),
  /**
   * Waitlist entries to read besides those named by waitlist slots: the API has
   * no list of waitlist entries, only GET /waitlist/{waitlistId}.
   */
  waitlistIds: z.array(z.number().int().positive()).default([]),
  availability: strictObject({
    horizonDays: z.number().int().min(1).max(365).default(14),
    /** A run takes a new snapshot only when the last one is at least this old. */
    minIntervalMinutes: z.number().int().min(0).default(PRO_AVAILABILITY_INTERVAL_MINUTES),
  }).prefault({}),
});

export const sourceSchema = z.discriminatedUnion('kind', [coreSource, subsetSource, proSource]);

/**
 * How long pmsync keeps copies of patient data it holds besides the tables:
 * quarantined payloads (days since last seen), schema-drift findings (days
 * since last updated), and, when set, closed versions in the history tables
 * (days since they stopped being current). Webhook events follow
 * webhooks.eventRetentionDays. Purged after every sync and hourly under serve.
 */
export const retentionSchema = strictObject({
  quarantineDays: z.number().int().min(1).max(3650).default(30),
  driftDays: z.number().int().min(1).max(3650).default(90),
  historyDays: z.number().int().min(1).max(36_500).nullable().default(null),
}).prefault({});
export type RetentionSettings = z.infer<typeof retentionSchema>;

export const fileSchema = strictObject({
  databaseUrl: z.string().optional(),
  retention: retentionSchema,
  privacy,
  sources: z.array(sourceSchema).default([]),
  // Parsed by their own modules (schedules.ts, webhooks.ts), strictly too.
  schedules: z.unknown().optional(),
  serve: z.unknown().optional(),
  webhooks: z.unknown().optional(),
});

/**
 * Where each credential of a source came from (an environment variable, or a
 * key of the config file), so an error can name what to fix without showing
 * the value.
 */
export type CredentialNames = Partial<Record<'apikey' | 'password' | 'token' | 'username' | 'where', string>>;

export type SecretKey = 'apikey' | 'password' | 'token';
/** Secrets are read from the environment or their files and budgets turned into requests a day at load time. */
type Resolved<T> = Omit<{ [K in keyof T]: K extends SecretKey ? string : T[K] }, 'budget' | 'privacy'> & {
  budget: number;
  /** Column policies, the top level's and the source's own together, the key read (privacy.ts); none when absent. */
  privacy?: PrivacySettings;
  /** Where each credential was configured, in an operator's words, for messages after a 401. */
  credentialNames?: CredentialNames;
};
/** E.g. apikey: "CORE_APIKEY", or "apikey (environment variable DOWNTOWN_APIKEY)" with where: "sources[0] of pmsync.json". */
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
  /** JSON lines, or pretty lines for a person (the CLI picks pretty on a terminal). */
  logFormat?: LogFormat;
  /** Only problems: logs at error, no progress, and of run summaries only what did not succeed. */
  quiet?: boolean;
  /** Seconds between progress lines of a running stream in the log (PMSYNC_PROGRESS_SECONDS). */
  progressSeconds?: number;
  redisUrl: string | undefined;
  sources: SourceConfig[];
  /** How `pmsync serve` schedules checks: budget, cron overrides, tick. */
  schedules: ScheduleSettings;
  /** HTTP port, shutdown and lock-wait settings of `serve` and `resync`. */
  serve: ServeSettings;
  /** Webhook receiver and refresh queue settings. */
  webhooks: WebhookSettings;
  /** How long quarantined payloads, drift findings and closed history versions are kept. */
  retention: RetentionSettings;
  /**
   * The bearer token serve's status page and /metrics ask for
   * (PMSYNC_STATUS_TOKEN or PMSYNC_STATUS_TOKEN_FILE); read for `serve` only, none when unset.
   */
  statusToken?: string;
}
