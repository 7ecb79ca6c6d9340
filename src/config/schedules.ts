/**
 * The `schedules` and `serve` sections of the config file, and how a budget
 * setting becomes requests a day. Parsed with the rest of the configuration
 * in load.ts.
 */
import { z } from 'zod';
import { strictObject } from '../strict-schema.ts';
import { isValidTimeZone } from '../time.ts';
import { cronProblem } from '../cron.ts';

/**
 * What a stream's schedule is: "budget" (pmsync decides when to check it,
 * spending the source's daily budget where it buys the most freshness), a cron
 * expression (pinned: checked at those times), or "off".
 */
export const BUDGET_MODE = 'budget';
/** Share of a source's daily quota that scheduled checks, webhook-triggered fetches and full refreshes may spend. */
export const DEFAULT_BUDGET = '15%';
/** A notified change waits at least this long, so a burst of notifications is read by one check. */
export const DEFAULT_DEBOUNCE_SECONDS = 60;
/** Webhook-notified changes are read within this many minutes while the budget allows. */
export const DEFAULT_NOTIFIED_WITHIN_MINUTES = 10;
/** A stream fed by webhooks is still checked at least this often, to catch what no notification announced. */
export const DEFAULT_SAFETY_NET_MINUTES = 360;
/** Every stream is checked at least once in this many hours, however quiet it is. */
export const DEFAULT_FLOOR_HOURS = 24;
/** A check whose window needs more pages than this is finished as a backfill (schedules.checkPages). */
export const DEFAULT_CHECK_PAGES = 3;
/** How often serve looks at what is due. */
export const DEFAULT_TICK_SECONDS = 15;
/** Stream runs one serve process executes at once. */
export const DEFAULT_RUN_CONCURRENCY = 4;
export const DEFAULT_PORT = 8080;
/** How long `serve` waits for in-flight pages after SIGTERM before it exits anyway. */
export const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 30;
/** How long `resync` waits for a run of the same stream in another process to finish. */
export const DEFAULT_LOCK_WAIT_SECONDS = 120;
/** How often `serve` looks for a change of its config file and the secret files it names (SIGHUP: at once). */
export const DEFAULT_RELOAD_SECONDS = 30;

/** "budget", a cron expression, or "off". */
export const scheduleMode = z.string().superRefine((value, ctx) => {
  if (value === 'off' || value === BUDGET_MODE) return;
  const problem = cronProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: `${problem} (or "budget", or "off")` });
});

/** A number of requests a day, or a percentage of the source's daily quota ("15%"). */
export const budgetValue = z.union([
  z.number().int().min(0),
  z.string().regex(/^\d{1,3}(\.\d+)?%$/, 'a number of requests a day, or a percentage of dailyQuota such as "15%"'),
]);

const timeZone = z.string().refine(isValidTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)');

const override = strictObject({
  /** Source name; every source when omitted. */
  source: z.string().optional(),
  /** Resource name; every resource of the source when omitted. */
  resource: z.string().optional(),
  /** "budget", a cron expression that pins the stream, or "off". */
  cron: scheduleMode.optional(),
  /** Freshness target of the stream (see maxStalenessMinutes below). */
  maxStalenessMinutes: z
    .number()
    .positive()
    .max(7 * 24 * 60)
    .optional(),
  /** Zone a cron expression is read in; the source's time zone when omitted. */
  timeZone: timeZone.optional(),
}).refine((o) => o.cron !== undefined || o.maxStalenessMinutes !== undefined, 'an override sets "cron", "maxStalenessMinutes" or both');

export const schedulesSchema = strictObject({
  /** Schedule of incremental streams: "budget" (default), a cron expression, or "off". */
  incremental: scheduleMode.default(BUDGET_MODE),
  /** Schedule of full-refresh streams: "budget" (default), a cron expression, or "off". */
  full: scheduleMode.default(BUDGET_MODE),
  /** Default budget of every source that sets none: requests a day, or a share of its dailyQuota. */
  budget: budgetValue.default(DEFAULT_BUDGET),
  /**
   * Freshness target of every stream: a polled stream is checked at least this
   * often in the hours it is expected to change; a stream fed by webhooks reads
   * notified changes within it. Honoured while the budget allows; none by default.
   */
  maxStalenessMinutes: z
    .number()
    .positive()
    .max(7 * 24 * 60)
    .optional(),
  notifiedWithinMinutes: z
    .number()
    .positive()
    .max(24 * 60)
    .default(DEFAULT_NOTIFIED_WITHIN_MINUTES),
  debounceSeconds: z.number().int().min(0).max(3600).default(DEFAULT_DEBOUNCE_SECONDS),
  safetyNetMinutes: z
    .number()
    .int()
    .min(5)
    .max(7 * 24 * 60)
    .default(DEFAULT_SAFETY_NET_MINUTES),
  floorHours: z
    .number()
    .positive()
    .max(24 * 7)
    .default(DEFAULT_FLOOR_HOURS),
  checkPages: z.number().int().min(1).max(1000).default(DEFAULT_CHECK_PAGES),
  tickSeconds: z.number().int().min(1).max(600).default(DEFAULT_TICK_SECONDS),
  concurrency: z.number().int().min(1).max(64).default(DEFAULT_RUN_CONCURRENCY),
  /** Run, at start-up, every pinned schedule whose last fire was missed while no process was up. */
  catchUp: z.boolean().default(true),
  /** Most specific entry wins: source and resource, then resource, then source. */
  overrides: z.array(override).default([]),
}).prefault({});

/** See serveSchema.runHeartbeatSeconds. */
export const DEFAULT_RUN_HEARTBEAT_SECONDS = 30;

export const serveSchema = strictObject({
  port: z.number().int().min(0).max(65_535).default(DEFAULT_PORT),
  host: z.string().default('0.0.0.0'),
  shutdownTimeoutSeconds: z.number().int().min(1).max(3600).default(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS),
  lockWaitSeconds: z.number().int().min(0).max(86_400).default(DEFAULT_LOCK_WAIT_SECONDS),
  /**
   * A replica running a job proves it is alive this often; one silent this
   * long (killed, frozen, cut off) loses the job to another replica, which
   * resumes it from its checkpoint (src/scheduler/dispatch.ts). pg-boss's floor is 10.
   */
  runHeartbeatSeconds: z.number().int().min(10).max(3600).default(DEFAULT_RUN_HEARTBEAT_SECONDS),
  /** Seconds between looks at the config file for changes; 0 reloads on SIGHUP only. */
  reloadSeconds: z.number().int().min(0).max(86_400).default(DEFAULT_RELOAD_SECONDS),
}).prefault({});

export type ScheduleSettings = z.infer<typeof schedulesSchema>;
export type ServeSettings = z.infer<typeof serveSchema>;
export type ScheduleOverride = z.infer<typeof override>;

/** A budget setting as requests a day, given the source's daily quota. */
export function resolveBudget(value: number | string, dailyQuota: number): number {
  if (typeof value === 'number') return value;
  return Math.floor((dailyQuota * Number(value.slice(0, -1))) / 100);
}

/**
 * Settings that may also come from the environment, for container set-ups
 * configured by variables alone. Environment values win over the file.
 */
export function scheduleEnv(env: NodeJS.ProcessEnv): { schedules: Record<string, unknown>; serve: Record<string, unknown> } {
  const schedules: Record<string, unknown> = {};
  const serve: Record<string, unknown> = {};
  if (env.PMSYNC_SCHEDULE_INCREMENTAL) schedules.incremental = env.PMSYNC_SCHEDULE_INCREMENTAL;
  if (env.PMSYNC_SCHEDULE_FULL) schedules.full = env.PMSYNC_SCHEDULE_FULL;
  if (env.PMSYNC_BUDGET) schedules.budget = /^\d+$/.test(env.PMSYNC_BUDGET) ? Number(env.PMSYNC_BUDGET) : env.PMSYNC_BUDGET;
  if (env.PMSYNC_CATCH_UP) schedules.catchUp = !/^(0|false|no|off)$/i.test(env.PMSYNC_CATCH_UP);
  const port = env.PMSYNC_PORT ?? env.PORT;
  if (port) serve.port = /^\d+$/.test(port) ? Number(port) : port;
  if (env.PMSYNC_HOST) serve.host = env.PMSYNC_HOST;
  if (env.PMSYNC_SHUTDOWN_TIMEOUT_SECONDS) serve.shutdownTimeoutSeconds = Number(env.PMSYNC_SHUTDOWN_TIMEOUT_SECONDS);
  if (env.PMSYNC_LOCK_WAIT_SECONDS) serve.lockWaitSeconds = Number(env.PMSYNC_LOCK_WAIT_SECONDS);
  return { schedules, serve };
}

function section(input: unknown, key: string): Record<string, unknown> {
  const value = input !== null && typeof input === 'object' ? (input as Record<string, unknown>)[key] : undefined;
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Parses both sections from the config file's object and the environment; problems are appended. */
export function parseServeSettings(
  fileInput: unknown,
  env: NodeJS.ProcessEnv,
  where: string,
  problems: string[],
): { schedules: ScheduleSettings; serve: ServeSettings } {
  const fromEnv = scheduleEnv(env);
  const schedules = schedulesSchema.safeParse({ ...section(fileInput, 'schedules'), ...fromEnv.schedules });
  const serve = serveSchema.safeParse({ ...section(fileInput, 'serve'), ...fromEnv.serve });
  const report = (name: string, issues: z.core.$ZodIssue[]) => {
    for (const issue of issues) problems.push(`${where}: ${[name, ...issue.path.map(String)].join('.')}: ${issue.message}`);
  };
  if (!schedules.success) report('schedules', schedules.error.issues);
  if (!serve.success) report('serve', serve.error.issues);
  return {
    schedules: schedules.success ? schedules.data : schedulesSchema.parse({}),
    serve: serve.success ? serve.data : serveSchema.parse({}),
  };
}
