/**
 * Configuration, parsed at start-up (and by `serve` at each reload of its
 * config file) against the schema in schema.ts, and checked across settings
 * and against the streams (checks.ts). Every problem is collected and
 * reported together in one ConfigError.
 *
 * Sources come from one place: the JSON config file (`--config` or
 * PMSYNC_CONFIG) when one is given, else the CORE_* environment variables,
 * which describe a single Core account. With a file, CORE_* variables are only
 * what the file reads by name. Secret values in the file may be written as
 * `{ "env": "NAME" }` or `{ "file": "/path" }` so the file itself holds none
 * (secrets.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { checkSource, sourceProblems, type StreamRegistry } from './checks.ts';
import { checkDatabaseUrl } from './database-url.ts';
import { mergePrivacy, readPrivacy, type PrivacySection } from './privacy.ts';
import { parseServeSettings, resolveBudget } from './schedules.ts';
import {
  coreSource,
  DEFAULT_PROGRESS_SECONDS,
  fileSchema,
  retentionSchema,
  sourceSchema,
  UNLIMITED,
  type Config,
  type CoreSourceConfig,
  type CredentialNames,
  type SecretKey,
  type SourceConfig,
} from './schema.ts';
import { readStatusToken, resolveSecrets, type SecretLookup } from './secrets.ts';
import { parseWebhookSettings } from './webhooks.ts';

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  configFile?: string;
  /**
   * Read the bearer token of serve's status page and /metrics
   * (PMSYNC_STATUS_TOKEN or PMSYNC_STATUS_TOKEN_FILE): only `serve` uses it,
   * so other commands neither need its file nor fail on it.
   */
  statusToken?: boolean;
}

/** Reads and validates the whole configuration against `streams`, listing every problem at once. */
export function loadConfig(streams: StreamRegistry, options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const configFile = options.configFile ?? env.PMSYNC_CONFIG;

  let fileInput: unknown = {};
  if (configFile) {
    try {
      fileInput = JSON.parse(readFileSync(configFile, 'utf8'));
    } catch (err) {
      problems.push(`config file ${configFile}: ${withoutExcerpt((err as Error).message)}`);
    }
  }

  const parsed = fileSchema.safeParse(fileInput);
  const secrets: SecretLookup = { env, dir: configFile ? dirname(resolve(configFile)) : process.cwd() };
  // The entry of the file each source came from (salvaged sources skip the broken ones).
  const entryOf = new Map<SourceConfig, number>();
  let sources: SourceConfig[];
  let databaseUrl = env.DATABASE_URL || undefined;
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${configFile ?? 'config'}: ${formatPath(issue.path)}: ${issue.message}`);
    sources = salvageSources(fileInput, secrets, problems, entryOf);
  } else {
    databaseUrl ??= parsed.data.databaseUrl;
    sources = parsed.data.sources.map((s, i) => ({
      ...(resolveSecrets(s, `sources[${i}]`, secrets, problems) as SourceConfig),
      credentialNames: fileCredentialNames(s, `sources[${i}]`, configFile ?? 'config'),
    }));
    sources.forEach((s, i) => entryOf.set(s, i));
  }

  const webhooks = parseWebhookSettings(fileInput, configFile ?? 'config', problems);

  const { schedules, serve } = parseServeSettings(fileInput, env, configFile ?? 'config', problems);

  // A file names every source, so leftover CORE_* variables never add one beside it.
  if (!configFile && (env.CORE_BASE_URL || env.CORE_APIKEY || env.CORE_USERNAME)) {
    const fromEnv = coreSource.safeParse({
      kind: 'core',
      name: env.CORE_SOURCE_NAME ?? 'core',
      baseUrl: env.CORE_BASE_URL,
      apikey: env.CORE_APIKEY,
      username: env.CORE_USERNAME,
      password: env.CORE_PASSWORD,
      dailyQuota: env.CORE_DAILY_QUOTA === undefined ? undefined : Number(env.CORE_DAILY_QUOTA),
      timeZone: env.CORE_TIME_ZONE,
      hours: env.CORE_HOURS?.trim()
        ? env.CORE_HOURS.split(';')
            .map((h) => h.trim())
            .filter(Boolean)
        : undefined,
      allowInsecureHttp: envBoolean(env.CORE_ALLOW_INSECURE_HTTP),
    });
    if (fromEnv.success)
      sources.push({
        ...(fromEnv.data as CoreSourceConfig),
        credentialNames: { apikey: 'CORE_APIKEY', username: 'CORE_USERNAME', password: 'CORE_PASSWORD' },
      });
    else problems.push(...envProblems(fromEnv.error.issues, env));
  }

  // Column policies: the top-level section checked once against every kind's tables, each source's against its own.
  const top = readPrivacy(fileInput, 'privacy', secrets, problems);
  if (top) problems.push(...streams.privacyColumnProblems(top.section.columns, `${configFile ?? 'config'}: privacy`));
  const ownPrivacy = new Map<SourceConfig, PrivacySection>();
  for (const s of sources) {
    const entry = entryOf.get(s);
    const entries = (fileInput as { sources?: unknown[] } | null)?.sources;
    const own = entry === undefined ? undefined : readPrivacy(entries?.[entry], `sources[${entry}].privacy`, secrets, problems);
    if (own) ownPrivacy.set(s, own.section);
    if (top || own) s.privacy = mergePrivacy(top?.section, own?.section, own?.key ?? top?.key ?? null);
    else delete s.privacy;
  }

  for (const s of sources) resolveSourceBudget(s, schedules.budget);
  problems.push(...sourceProblems({ fileInput, sources, entryOf, ownPrivacy, file: configFile ?? 'config' }, streams));

  if (databaseUrl) databaseUrl = checkDatabaseUrl(databaseUrl, problems);

  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL: "${env.LOG_LEVEL}" is not a log level: use one of ${LOG_LEVELS.join(', ')}`);
  }

  const progressSeconds = env.PMSYNC_PROGRESS_SECONDS === undefined ? DEFAULT_PROGRESS_SECONDS : Number(env.PMSYNC_PROGRESS_SECONDS);
  if (!(progressSeconds > 0)) {
    problems.push(
      `PMSYNC_PROGRESS_SECONDS: "${env.PMSYNC_PROGRESS_SECONDS}" is not a number of seconds above 0 (default ${DEFAULT_PROGRESS_SECONDS})`,
    );
  }

  const statusToken = options.statusToken ? readStatusToken(env, problems) : undefined;

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    databaseUrl,
    dataDir: env.PMSYNC_DATA_DIR ?? '.pmsync',
    logLevel,
    progressSeconds,
    redisUrl: env.REDIS_URL || undefined,
    sources,
    schedules,
    serve,
    webhooks,
    retention: parsed.success ? parsed.data.retention : retentionSchema.parse(undefined),
    ...(statusToken === undefined ? {} : { statusToken }),
  };
}

function resolveSourceBudget(s: SourceConfig, fallback: number | string): void {
  const raw = (s as { budget?: number | string }).budget;
  (s as { budget: number }).budget =
    s.kind === 'pro' ? (raw === undefined ? UNLIMITED : Number(raw)) : resolveBudget(raw ?? fallback, s.dailyQuota);
}

/** pino's levels, the values LOG_LEVEL may take. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * When the file fails its schema, the source entries are still checked one by
 * one (secrets from the environment, URLs, usernames), so a single run lists
 * every problem instead of the first layer of them. Entries that pass are
 * returned for the checks that follow.
 */
function salvageSources(fileInput: unknown, secrets: SecretLookup, problems: string[], entryOf: Map<SourceConfig, number>): SourceConfig[] {
  const entries = (fileInput as { sources?: unknown } | null)?.sources;
  if (!Array.isArray(entries)) return [];
  const valid: SourceConfig[] = [];
  entries.forEach((entry, i) => {
    if (!entry || typeof entry !== 'object') return;
    const resolved = resolveSecrets(entry as Record<string, unknown>, `sources[${i}]`, secrets, problems);
    const one = sourceSchema.safeParse(resolved);
    if (one.success) {
      valid.push(one.data as SourceConfig);
      entryOf.set(one.data as SourceConfig, i);
      return;
    }
    const raw = resolved as { name?: unknown; kind?: unknown; baseUrl?: unknown; username?: unknown };
    if (typeof raw.baseUrl === 'string' && (raw.kind === 'pro' || typeof raw.username === 'string')) {
      const where = `source "${typeof raw.name === 'string' ? raw.name : '?'}" (sources[${i}])`;
      problems.push(...checkSource(raw as SourceConfig, true).map((p) => `${where}: ${p}`));
    }
  });
  return valid;
}

/** How a 401 message names the credentials of a source entry of the config file. */
function fileCredentialNames(entry: Record<string, unknown>, where: string, file: string): CredentialNames {
  const named = (key: SecretKey | 'username') => {
    const v = entry[key];
    if (v && typeof v === 'object' && 'env' in v) return `${key} (environment variable ${(v as { env: string }).env})`;
    if (v && typeof v === 'object' && 'file' in v) return `${key} (file ${(v as { file: string }).file})`;
    return key;
  };
  const keys: Array<SecretKey | 'username'> = entry.kind === 'pro' ? ['token'] : ['apikey', 'username', 'password'];
  return { ...Object.fromEntries(keys.map((k) => [k, named(k)])), where: `${where} of ${file}` };
}

/**
 * A JSON.parse message without the excerpt of the input that newer engines add
 * (`Unexpected token 'x', "...": "abc"... is not valid JSON`): the excerpt may
 * be a secret written inline in the file.
 */
function withoutExcerpt(message: string): string {
  return message.replace(/, ".*" is not valid JSON$/s, ' (not valid JSON)');
}

function formatPath(path: PropertyKey[]): string {
  return (
    path
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
      .join('')
      .replace(/^\./, '') || '(root)'
  );
}

/** The CORE_* variables of a single Core source, and what each one holds. */
const CORE_ENV: Record<string, { name: string; what: string }> = {
  baseUrl: {
    name: 'CORE_BASE_URL',
    what: 'the base URL of the Core API, ending in /api/v1 (e.g. https://api.example-practice.com/api/v1)',
  },
  apikey: { name: 'CORE_APIKEY', what: 'the gateway key of your integration (sent as the apikey parameter)' },
  username: { name: 'CORE_USERNAME', what: 'the name of an active API user (without ":")' },
  password: { name: 'CORE_PASSWORD', what: "that API user's password" },
  dailyQuota: { name: 'CORE_DAILY_QUOTA', what: "the account's daily request quota, a whole number (default 1000)" },
  timeZone: { name: 'CORE_TIME_ZONE', what: 'the time zone of ModifiedOn values, an IANA name such as UTC or America/New_York' },
  hours: {
    name: 'CORE_HOURS',
    what: 'the practice\'s opening hours in CORE_TIME_ZONE, entries split by ";" (e.g. "Mon-Fri 08:00-19:00; Sat 09:00-13:00")',
  },
  name: { name: 'CORE_SOURCE_NAME', what: 'the name of the source (lowercase letters, digits, "-" or "_")' },
  allowInsecureHttp: {
    name: 'CORE_ALLOW_INSECURE_HTTP',
    what: 'true to accept a plain http:// CORE_BASE_URL to another machine, or false',
  },
};

/** "true" and "false" as booleans, unset or empty as not set; any other value is left for the schema to refuse. */
function envBoolean(value: string | undefined): boolean | string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value;
}
const CORE_CREDENTIALS = ['baseUrl', 'apikey', 'username', 'password'] as const;

function listed(names: string[]): string {
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * Problems of the CORE_* source in an operator's words: which variable to set
 * and what it holds, instead of the schema's wording.
 */
function envProblems(issues: z.core.$ZodIssue[], env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const reported = new Set<string>();
  const set = CORE_CREDENTIALS.filter((k) => env[CORE_ENV[k]!.name]).map((k) => CORE_ENV[k]!.name);
  for (const issue of issues) {
    const key = String(issue.path[0] ?? '');
    const v = CORE_ENV[key];
    if (!v) {
      problems.push(`environment: ${formatPath(issue.path)}: ${issue.message}`);
      continue;
    }
    // Each of the hours' entries is checked on its own, and each problem is its own line.
    if (reported.has(v.name) && key !== 'hours') continue;
    reported.add(v.name);
    const value = env[v.name];
    if (value === undefined || value === '') {
      problems.push(
        `environment: ${v.name} is not set: set it to ${v.what}. ` +
          `${listed(set)} ${set.length === 1 ? 'is' : 'are'} set, and CORE_BASE_URL, CORE_APIKEY, CORE_USERNAME and CORE_PASSWORD together configure one Core source.`,
      );
    } else {
      const shown = key === 'apikey' || key === 'password' ? '' : ` "${value}"`;
      // The schema's own wording ("Invalid input: expected number") says less than what the variable holds.
      const why = /^Invalid|^Too (small|big)/.test(issue.message) ? '' : ` (${issue.message})`;
      problems.push(`environment: ${v.name}${shown} is not valid${why}: set it to ${v.what}.`);
    }
  }
  return problems;
}
