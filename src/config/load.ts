/**
 * Configuration, parsed at start-up (and by `serve` at each reload of its
 * config file) against the schema in schema.ts. Every problem is
 * collected and reported together in one ConfigError.
 *
 * Sources come from one place: the JSON config file (`--config` or
 * PMSYNC_CONFIG) when one is given, else the CORE_* environment variables,
 * which describe a single Core account. With a file, CORE_* variables are only
 * what the file reads by name. Secret values in the file may be written as
 * `{ "env": "NAME" }` or `{ "file": "/path" }` so the file itself holds none; a
 * secret file is read at every load (`serve` reloads the configuration while
 * it runs, see src/serve/reload.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigError, PmsyncError } from '../errors.ts';
import type { CredentialNames } from '../api/http.ts';
import { insecureHttpHost } from '../api/insecure-http.ts';
import { checkTableSettings, tableStreams } from '../sync/table-settings.ts';
import { checkPrivacyColumns, checkSourcePrivacy, keyProblem } from '../sync/privacy.ts';
import { mergePrivacy, parseColumns, type PrivacySection } from '../privacy/settings.ts';
import { parseServeSettings, resolveBudget } from '../scheduler/settings.ts';
import { parseWebhookSettings } from '../webhooks/settings.ts';
import { suggestion, validNames } from '../strict-schema.ts';
import {
  coreSource,
  DEFAULT_PROGRESS_SECONDS,
  fileSchema,
  retentionSchema,
  sourceSchema,
  type Config,
  type CoreSourceConfig,
  type RestSourceConfig,
  type SecretKey,
  type SourceConfig,
} from './schema.ts';
import { UNLIMITED } from '../state/quota.ts';
import { resourceNames } from '../sync/streams/index.ts';

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
  if (top) problems.push(...checkPrivacyColumns(top.section.columns, `${configFile ?? 'config'}: privacy`));
  const ownPrivacy = new Map<SourceConfig, PrivacySection>();
  for (const s of sources) {
    const entry = entryOf.get(s);
    const entries = (fileInput as { sources?: unknown[] } | null)?.sources;
    const own = entry === undefined ? undefined : readPrivacy(entries?.[entry], `sources[${entry}].privacy`, secrets, problems);
    if (own) ownPrivacy.set(s, own.section);
    if (top || own) s.privacy = mergePrivacy(top?.section, own?.section, own?.key ?? top?.key ?? null);
    else delete s.privacy;
  }

  const declared = declaredSources(fileInput, sources);
  problems.push(...resourceProblems(declared, configFile ?? 'config'));
  problems.push(...overrideProblems(rawOverrides(fileInput), declared, configFile ?? 'config'));

  const whereOf = (s: SourceConfig) => {
    const entry = entryOf.get(s);
    return `source "${s.name}" (${entry === undefined ? 'CORE_* environment variables' : `sources[${entry}]`})`;
  };
  const seen = new Set<string>();
  sources.forEach((s) => {
    const where = whereOf(s);
    if (seen.has(s.name)) problems.push(`${where}: the name is used twice`);
    seen.add(s.name);
    resolveSourceBudget(s, schedules.budget);
    problems.push(...checkSource(s, entryOf.has(s) ? FILE_OPT_IN : ENV_OPT_IN).map((p) => `${where}: ${p}`));
    problems.push(...checkTableSettings(s).map((p) => `${where}: ${p}`));
    const own = ownPrivacy.get(s);
    if (own) problems.push(...checkPrivacyColumns(own.columns, 'privacy', tableStreams(s)).map((p) => `${where}: ${p}`));
    problems.push(...checkSourcePrivacy(s, tableStreams(s)).map((p) => `${where}: ${p}`));
  });
  const sameAccount = sameAccountPairs(sources);
  problems.push(...sameAccount.map((pair) => describeSameAccount(pair, whereOf)));
  problems.push(...checkSharedKeys(sources, sameAccount));

  if (databaseUrl) {
    try {
      const u = new URL(databaseUrl);
      if (!/^postgres(ql)?:$/.test(u.protocol)) problems.push('DATABASE_URL: must start with postgres:// or postgresql://');
      else {
        databaseUrl = withLibpqSslModes(databaseUrl, u);
        problems.push(...tlsFileProblems(u));
      }
    } catch {
      problems.push('DATABASE_URL: not a valid URL (expected postgres://user:password@host:5432/db)');
    }
  }

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

/** The shortest bearer token accepted: a guessable one would protect nothing. */
const MIN_STATUS_TOKEN_LENGTH = 16;

/**
 * The bearer token of the status page and /metrics, from PMSYNC_STATUS_TOKEN
 * or the file PMSYNC_STATUS_TOKEN_FILE names (a mounted Docker or Kubernetes
 * secret); undefined when neither is set (an empty value counts as unset).
 * Problems never quote the token.
 */
function readStatusToken(env: NodeJS.ProcessEnv, problems: string[]): string | undefined {
  const inline = env.PMSYNC_STATUS_TOKEN || undefined;
  const file = env.PMSYNC_STATUS_TOKEN_FILE || undefined;
  if (inline !== undefined && file !== undefined) {
    problems.push('PMSYNC_STATUS_TOKEN and PMSYNC_STATUS_TOKEN_FILE are both set: set only one of them');
    return undefined;
  }
  if (inline === undefined && file === undefined) return undefined;
  const where = inline !== undefined ? 'PMSYNC_STATUS_TOKEN' : 'PMSYNC_STATUS_TOKEN_FILE';
  const token = inline ?? readSecretFile(resolve(file!), where, 'the bearer token of the status page and /metrics', problems);
  if (token === '') return undefined;
  // It travels in an Authorization header: visible ASCII, no spaces.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    problems.push(
      `${where}: the token must be printable ASCII without spaces or line breaks (it is sent as "Authorization: Bearer <token>")`,
    );
  } else if (token.length < MIN_STATUS_TOKEN_LENGTH) {
    problems.push(
      `${where}: the token is shorter than ${MIN_STATUS_TOKEN_LENGTH} characters: use a random one, e.g. the output of "openssl rand -hex 32"`,
    );
  }
  return token;
}

function resolveSourceBudget(s: SourceConfig, fallback: number | string): void {
  const raw = (s as { budget?: number | string }).budget;
  (s as { budget: number }).budget =
    s.kind === 'pro' ? (raw === undefined ? UNLIMITED : Number(raw)) : resolveBudget(raw ?? fallback, s.dailyQuota);
}

/** pino's levels, the values LOG_LEVEL may take. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * node-postgres 8 reads `sslmode=prefer`, `require` and `verify-ca` as
 * `verify-full` and prints a multi-line warning that this will change. pmsync
 * gives them libpq's meaning now (the meaning psql and node-postgres 9 give
 * them; docs/operations.md, "Database connection"), which also keeps the
 * warning out of every command's output. `verify-full`, `disable` and
 * node-postgres' own `no-verify` mean the same either way and are left as
 * written, as is a URL that already says `uselibpqcompat`.
 */
function withLibpqSslModes(written: string, url: URL): string {
  const mode = url.searchParams.get('sslmode');
  if (mode === null || !['prefer', 'require', 'verify-ca'].includes(mode) || url.searchParams.has('uselibpqcompat')) return written;
  url.searchParams.set('uselibpqcompat', 'true');
  return url.href;
}

/** What each TLS file parameter of DATABASE_URL holds, for messages about it. */
const TLS_FILES: Record<string, string> = {
  sslrootcert: "the CA certificate that signed the database server's certificate",
  sslcert: 'the client certificate pmsync shows the database server',
  sslkey: "the client certificate's private key",
};

/**
 * The files DATABASE_URL names are read when pmsync connects; one that is
 * missing or unreadable is said here, with every other problem, instead of
 * as a failed connection. `verify-ca` checks against `sslrootcert` alone, so
 * it needs one (as in libpq).
 */
function tlsFileProblems(url: URL): string[] {
  const problems: string[] = [];
  for (const [key, what] of Object.entries(TLS_FILES)) {
    const path = url.searchParams.get(key);
    if (path === null) continue;
    if (key === 'sslrootcert' && path === 'system') {
      problems.push(
        'DATABASE_URL: sslrootcert=system is not supported: leave sslrootcert out to trust the usual public CAs, or name the CA file (sslrootcert=/path/to/ca.pem)',
      );
      continue;
    }
    readSecretFile(path, `DATABASE_URL ${key}`, what, problems);
  }
  if (url.searchParams.get('sslmode') === 'verify-ca' && !url.searchParams.has('sslrootcert')) {
    problems.push(
      'DATABASE_URL: sslmode=verify-ca checks the certificate against the CA in sslrootcert: add sslrootcert=/path/to/ca.pem, or use sslmode=verify-full',
    );
  }
  return problems;
}

/** Two Core or Subset sources reading one account: the same base URL with the same gateway key. */
interface SameAccount {
  a: SourceConfig;
  b: SourceConfig;
  /** Resources both would read. */
  common: string[];
}

function accountOf(s: SourceConfig): string | undefined {
  if (s.kind === 'pro' || !s.apikey) return undefined;
  let url: URL;
  try {
    url = new URL(s.baseUrl);
  } catch {
    return undefined;
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')} ${s.apikey}`;
}

/**
 * Pairs of sources that read the same account and at least one same resource:
 * every such record would be fetched and stored twice, under both names, and
 * each source would spend the other's requests. Sources that split the
 * account's resources between them (disjoint `streams`) are fine.
 */
function sameAccountPairs(sources: SourceConfig[]): SameAccount[] {
  const pairs: SameAccount[] = [];
  sources.forEach((a, i) => {
    const account = accountOf(a);
    if (account === undefined) return;
    for (const b of sources.slice(i + 1)) {
      if (accountOf(b) !== account) continue;
      const read = (s: SourceConfig) => s.streams ?? resourceNames(s.kind);
      const common = read(a).filter((r) => read(b).includes(r));
      if (common.length > 0) pairs.push({ a, b, common });
    }
  });
  return pairs;
}

function describeSameAccount({ a, b, common }: SameAccount, whereOf: (s: SourceConfig) => string): string {
  return (
    `${whereOf(a)} and ${whereOf(b)} read the same account (${a.baseUrl} with the same gateway key): both would fetch and store ${common.join(', ')}, ` +
    'each record twice under two names, each spending the requests of the other. Keep one of them, ' +
    'or give both a "streams" list with no resource in common'
  );
}

/** Sources sharing a gateway key share its ledger, so they must agree on its quota and budget. */
function checkSharedKeys(sources: SourceConfig[], sameAccount: SameAccount[]): string[] {
  const byKey = new Map<string, RestSourceConfig[]>();
  for (const s of sources) if (s.kind !== 'pro' && s.apikey) byKey.set(s.apikey, [...(byKey.get(s.apikey) ?? []), s]);
  const problems: string[] = [];
  for (const group of byKey.values()) {
    const [first, ...rest] = group;
    for (const other of rest) {
      // A pair refused as one account is told to keep one source, not to align two.
      if (sameAccount.some((p) => p.a === first && p.b === other)) continue;
      const differs = (['dailyQuota', 'budget'] as const).filter((k) => other[k] !== first![k]);
      if (other.quota.reservePercent !== first!.quota.reservePercent) differs.push('quota.reservePercent' as never);
      if (differs.length > 0) {
        problems.push(
          `sources "${first!.name}" and "${other.name}" share a gateway key, so they share its daily quota: set the same ${differs.join(', ')} on both`,
        );
      }
    }
  }
  return problems;
}

/**
 * The schedule overrides as written, so their sources and resources are checked
 * even when another schedules setting fails its schema.
 */
function rawOverrides(fileInput: unknown): Array<{ source?: string; resource?: string }> {
  const schedules = (fileInput as { schedules?: unknown } | null)?.schedules;
  const overrides = schedules !== null && typeof schedules === 'object' ? (schedules as { overrides?: unknown }).overrides : undefined;
  if (!Array.isArray(overrides)) return [];
  return overrides.map((o) => {
    const e = o !== null && typeof o === 'object' ? (o as Record<string, unknown>) : {};
    return {
      ...(typeof e.source === 'string' ? { source: e.source } : {}),
      ...(typeof e.resource === 'string' ? { resource: e.resource } : {}),
    };
  });
}

/** What each source entry declares, read from the raw input so entries with other problems are checked too. */
interface DeclaredSource {
  where: string;
  name: string | undefined;
  kind: SourceConfig['kind'];
  streams: unknown;
  fullRefresh: unknown;
}

const KINDS: ReadonlyArray<SourceConfig['kind']> = ['core', 'subset', 'pro'];

function declaredSources(fileInput: unknown, parsed: SourceConfig[]): DeclaredSource[] {
  const entries = (fileInput as { sources?: unknown } | null)?.sources;
  const out: DeclaredSource[] = [];
  if (Array.isArray(entries)) {
    entries.forEach((entry, i) => {
      const e = entry !== null && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
      if (!KINDS.includes(e.kind as SourceConfig['kind'])) return;
      out.push({
        where: `sources[${i}]`,
        name: typeof e.name === 'string' ? e.name : undefined,
        kind: e.kind as SourceConfig['kind'],
        streams: e.streams,
        fullRefresh: e.fullRefresh,
      });
    });
  }
  // The CORE_* source is the one parsed source no entry describes.
  for (const s of parsed)
    if (!out.some((d) => d.name === s.name))
      out.push({ where: 'environment', name: s.name, kind: s.kind, streams: undefined, fullRefresh: undefined });
  return out;
}

/** Names in `streams` and `fullRefresh` must be resources the source's API kind serves. */
function resourceProblems(declared: DeclaredSource[], file: string): string[] {
  const problems: string[] = [];
  for (const d of declared) {
    const known = resourceNames(d.kind);
    for (const key of d.kind === 'pro' ? ['streams'] : ['streams', 'fullRefresh']) {
      const names = key === 'streams' ? d.streams : d.fullRefresh;
      if (!Array.isArray(names)) continue;
      names.forEach((name, j) => {
        if (typeof name === 'string' && !known.includes(name)) {
          problems.push(`${file}: ${d.where}.${key}[${j}]: "${name}" is not a resource of the ${d.kind} API${suggestion(name, known)}`);
        }
      });
    }
  }
  return problems;
}

/** A schedule override must name a configured source, and a resource that source reads. */
function overrideProblems(overrides: Array<{ source?: string; resource?: string }>, declared: DeclaredSource[], file: string): string[] {
  const problems: string[] = [];
  const names = declared.flatMap((d) => (d.name === undefined ? [] : [d.name]));
  const resourcesOf = (d: DeclaredSource) => {
    const all = resourceNames(d.kind);
    return Array.isArray(d.streams) ? all.filter((r) => (d.streams as unknown[]).includes(r)) : all;
  };
  overrides.forEach((o, i) => {
    const where = `${file}: schedules.overrides[${i}]`;
    const owner = o.source === undefined ? undefined : declared.find((d) => d.name === o.source);
    if (o.source !== undefined && !owner) {
      problems.push(`${where}.source: no source named "${o.source}"${suggestion(o.source, names)}`);
      return;
    }
    if (o.resource === undefined) return;
    const candidates = [...new Set((owner ? [owner] : declared).flatMap(resourcesOf))];
    if (!candidates.includes(o.resource)) {
      problems.push(
        `${where}.resource: ${owner ? `source "${owner.name}" reads no resource` : 'no configured source reads a resource'} "${o.resource}"${suggestion(o.resource, candidates)}`,
      );
    }
  });
  return problems;
}

/** How a source says that plain http to its API is accepted, in its config file and through CORE_* variables. */
const FILE_OPT_IN = 'set "allowInsecureHttp": true on this source';
const ENV_OPT_IN = 'set CORE_ALLOW_INSECURE_HTTP=true';

function checkSource(s: SourceConfig, optIn: string): string[] {
  const problems: string[] = [];
  // Only parsed sources carry a resolved budget (salvageSources checks raw entries too).
  if (s.kind !== 'pro' && typeof s.budget === 'number' && s.quota) {
    const allowed = Math.floor((s.dailyQuota * (100 - s.quota.reservePercent)) / 100);
    if (s.budget > allowed) {
      problems.push(
        `budget ${s.budget} is more than the ${allowed} requests scheduled work may spend a day (dailyQuota ${s.dailyQuota} minus the ${s.quota.reservePercent}% reserve)`,
      );
    }
  }
  let url: URL | undefined;
  try {
    url = new URL(s.baseUrl);
  } catch {
    problems.push(`baseUrl "${s.baseUrl}" is not an absolute URL`);
  }
  if (url) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') problems.push('baseUrl must use https://');
    else if (insecureHttpHost(url) && s.allowInsecureHttp !== true) {
      problems.push(
        `baseUrl is plain http:// to ${url.host}: the API credentials and patient data would cross the network unencrypted. ` +
          `Use https://, or, only where the network to the API is trusted (a private link or VPN), ${optIn}`,
      );
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
      problems.push(...checkSource(raw as SourceConfig, FILE_OPT_IN).map((p) => `${where}: ${p}`));
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

const SECRET_WHAT: Record<string, string> = {
  apikey: "the source's gateway key",
  password: "the API user's password",
  token: "the source's Pro API token",
};

/** Where `{ "env" }` and `{ "file" }` secrets are read: the environment, and paths relative to the config file's folder. */
interface SecretLookup {
  env: NodeJS.ProcessEnv;
  dir: string;
}

function resolveSecrets(source: Record<string, unknown>, where: string, lookup: SecretLookup, problems: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...source };
  for (const key of ['apikey', 'password', 'token']) {
    const v = out[key];
    if (!v || typeof v !== 'object') continue;
    out[key] = resolveSecret(v, `${where}.${key}`, SECRET_WHAT[key]!, lookup, problems) ?? v;
  }
  return out;
}

/** The value of a `{ "env" }` or `{ "file" }` secret ('' with a problem when it cannot be read); undefined for any other shape. */
function resolveSecret(v: object, where: string, what: string, lookup: SecretLookup, problems: string[]): string | undefined {
  if ('env' in v && typeof v.env === 'string') {
    const value = lookup.env[v.env];
    if (!value) problems.push(`${where}: environment variable ${v.env} is not set (it holds ${what})`);
    return value ?? '';
  }
  if ('file' in v && typeof v.file === 'string') return readSecretFile(resolve(lookup.dir, v.file), where, what, problems);
  return undefined;
}

const HASH_KEY_WHAT = 'the secret key column policies hash with';

/**
 * A `privacy` section as written (top level or a source's), its key read like
 * every secret. Read from the raw input, so a file failing its schema
 * elsewhere is still checked here; shapes the schema refuses are skipped.
 */
function readPrivacy(
  container: unknown,
  where: string,
  lookup: SecretLookup,
  problems: string[],
): { section: PrivacySection; key: string | null } | undefined {
  const v = container !== null && typeof container === 'object' ? (container as { privacy?: unknown }).privacy : undefined;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const p = v as { key?: unknown; columns?: unknown; raw?: unknown };
  const columns =
    typeof p.columns === 'string' ||
    (p.columns !== null && typeof p.columns === 'object' && Object.values(p.columns).every((x) => typeof x === 'string'))
      ? (p.columns as string | Record<string, string>)
      : undefined;
  const section = parseColumns(columns, where, problems);
  if (p.raw === 'all' || p.raw === 'declared') section.raw = p.raw;
  let key: string | null = null;
  if (typeof p.key === 'string') key = p.key;
  else if (p.key !== null && typeof p.key === 'object') key = resolveSecret(p.key, `${where}.key`, HASH_KEY_WHAT, lookup, problems) ?? null;
  if (key) {
    const short = keyProblem(key, `${where}.key`);
    if (short) problems.push(short);
  }
  return { section, key: key || null };
}

/**
 * A secret file's value, without its trailing newline (`echo` and most editors
 * add one; Kubernetes Secrets keep what they were given). A file that cannot
 * be read or holds nothing is a problem naming its path and what it holds,
 * never anything it contains.
 */
function readSecretFile(path: string, where: string, what: string, problems: string[]): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'cannot be read (permission denied)'
          : `cannot be read (${code ?? 'error'})`;
    problems.push(`${where}: file ${path} ${why} (it holds ${what})`);
    return '';
  }
  const value = text.replace(/[\r\n]+$/, '');
  if (value === '') problems.push(`${where}: file ${path} is empty (it should hold ${what})`);
  return value;
}

/**
 * The secret files a config file refers to, resolved, in the order they are
 * named: what `serve` watches besides the file itself. Entries that are not
 * well formed are skipped (the load reports them).
 */
export function secretFiles(fileInput: unknown, configFile: string): string[] {
  const entries = (fileInput as { sources?: unknown } | null)?.sources;
  const dir = dirname(resolve(configFile));
  const out: string[] = [];
  const add = (v: unknown) => {
    if (v && typeof v === 'object' && 'file' in v && typeof v.file === 'string') out.push(resolve(dir, v.file));
  };
  const privacyKey = (container: unknown) => {
    const p = container && typeof container === 'object' ? (container as { privacy?: unknown }).privacy : undefined;
    if (p && typeof p === 'object') add((p as { key?: unknown }).key);
  };
  privacyKey(fileInput);
  if (!Array.isArray(entries)) return out;
  for (const entry of entries) {
    if (!entry || typeof entry !== 'object') continue;
    for (const key of ['apikey', 'password', 'token']) add((entry as Record<string, unknown>)[key]);
    privacyKey(entry);
  }
  return out;
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
    if (reported.has(v.name)) continue;
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

/** The sources `--source NAME` selects (all without it); a name that matches none is a usage error (exit 2). */
export function findSource(config: Config, name: string | undefined): SourceConfig[] {
  if (name === undefined) return config.sources;
  const s = config.sources.find((x) => x.name === name);
  if (!s) {
    const known = config.sources.map((x) => x.name);
    throw new PmsyncError('USAGE', `--source ${name}: no such source${validNames(name, known, 'sources')}`);
  }
  return [s];
}
