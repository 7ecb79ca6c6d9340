/**
 * The `schedules` and `serve` sections of the config file. Parsed with the rest
 * of the configuration in src/config.ts.
 */
import { z } from 'zod';
import { isValidTimeZone } from '../sync/window.ts';
import { cronProblem } from './crontab.ts';

/** Incremental streams: every 15 minutes. */
export const DEFAULT_INCREMENTAL_CRON = '*/15 * * * *';
/** Full-refresh streams: nightly at 02:00 in the source's time zone. */
export const DEFAULT_FULL_CRON = '0 2 * * *';
export const DEFAULT_PORT = 8080;
/** How long `serve` waits for in-flight pages after SIGTERM before it exits anyway. */
export const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 30;
/** How long `resync` waits for a run of the same stream in another process to finish. */
export const DEFAULT_LOCK_WAIT_SECONDS = 120;

/** A cron expression, or "off" for no schedule. */
export const cronOrOff = z.string().superRefine((value, ctx) => {
  if (value === 'off') return;
  const problem = cronProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: `${problem} (or "off")` });
});

const timeZone = z.string().refine(isValidTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)');

const override = z.object({
  /** Source name; every source when omitted. */
  source: z.string().optional(),
  /** Resource name; every resource of the source when omitted. */
  resource: z.string().optional(),
  cron: cronOrOff,
  /** Zone the expression is read in; the source's time zone when omitted. */
  timeZone: timeZone.optional(),
});

export const schedulesSchema = z
  .object({
    incremental: cronOrOff.default(DEFAULT_INCREMENTAL_CRON),
    full: cronOrOff.default(DEFAULT_FULL_CRON),
    /** Run once, at start-up, every schedule whose last fire was missed while no process was up. */
    catchUp: z.boolean().default(true),
    /** Most specific entry wins: source and resource, then resource, then source. */
    overrides: z.array(override).default([]),
  })
  .prefault({});

export const serveSchema = z
  .object({
    port: z.number().int().min(0).max(65_535).default(DEFAULT_PORT),
    host: z.string().default('0.0.0.0'),
    shutdownTimeoutSeconds: z.number().int().min(1).max(3600).default(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS),
    lockWaitSeconds: z.number().int().min(0).max(86_400).default(DEFAULT_LOCK_WAIT_SECONDS),
  })
  .prefault({});

export type ScheduleSettings = z.infer<typeof schedulesSchema>;
export type ServeSettings = z.infer<typeof serveSchema>;
export type ScheduleOverride = z.infer<typeof override>;

/**
 * Settings that may also come from the environment, for container set-ups
 * configured by variables alone. Environment values win over the file.
 */
export function scheduleEnv(env: NodeJS.ProcessEnv): { schedules: Record<string, unknown>; serve: Record<string, unknown> } {
  const schedules: Record<string, unknown> = {};
  const serve: Record<string, unknown> = {};
  if (env.PMSYNC_SCHEDULE_INCREMENTAL) schedules.incremental = env.PMSYNC_SCHEDULE_INCREMENTAL;
  if (env.PMSYNC_SCHEDULE_FULL) schedules.full = env.PMSYNC_SCHEDULE_FULL;
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
