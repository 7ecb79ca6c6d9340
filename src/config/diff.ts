/**
 * What differs between the configuration in force and a newly loaded one, and
 * which of it a running `serve` can take without a restart. Pure: no files,
 * no clock.
 *
 * Taken live: the set of sources and every setting of a source (credentials,
 * budget, quota, limiter, streams...), the `schedules` section but for the
 * two below, and `serve.reloadSeconds` and `serve.lockWaitSeconds`.
 *
 * Needing a restart, because what they configure is built once when `serve`
 * starts: where the database is (`databaseUrl`), where `serve` listens and how
 * long it waits at shutdown (`serve.port`, `serve.host`,
 * `serve.shutdownTimeoutSeconds`), how many runs its queue worker takes
 * (`schedules.concurrency`), the start-up catch-up (`schedules.catchUp`), and
 * the `webhooks` section (the refresh queue's retry policy, the worker's
 * concurrency, the receiver's limits), and the status page's bearer token (a
 * new PMSYNC_STATUS_TOKEN_FILE content). The settings read from the environment
 * or the command line (log level and format, data folder, Redis) cannot
 * change in a running process at all.
 */
import type { Config, SecretKey, SourceConfig } from './schema.ts';

export interface ConfigChanges {
  added: string[];
  removed: string[];
  /** Per source whose settings differ, the names of those settings (never their values). */
  changed: Record<string, string[]>;
  /** Settings outside the sources that differ and apply live, e.g. "schedules.overrides". */
  settings: string[];
  /** Settings that differ but need a restart: the running process keeps its values. */
  needsRestart: string[];
}

type Section = 'serve' | 'schedules' | 'webhooks';

/** Top-level settings built once at start. */
const RESTART_TOP = ['databaseUrl', 'redisUrl', 'dataDir', 'logLevel', 'logFormat', 'quiet', 'progressSeconds', 'statusToken'] as const;
/** Per section, the settings built once at start; `true`: all of them. */
const RESTART_IN: Record<Section, readonly string[] | true> = {
  serve: ['port', 'host', 'shutdownTimeoutSeconds'],
  schedules: ['concurrency', 'catchUp'],
  webhooks: true,
};
const SECTIONS: readonly Section[] = ['serve', 'schedules', 'webhooks'];
const CREDENTIALS: ReadonlyArray<SecretKey | 'username'> = ['apikey', 'username', 'password', 'token'];

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isRestartOnly(section: Section, key: string): boolean {
  const keys = RESTART_IN[section];
  return keys === true || keys.includes(key);
}

/** The settings of two versions of one source that differ, by name. */
export function changedSettings(old: SourceConfig, next: SourceConfig): string[] {
  const a = old as unknown as Record<string, unknown>;
  const b = next as unknown as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => k !== 'credentialNames');
  const out = keys.filter((k) => !same(a[k], b[k]));
  // A secret read from elsewhere (an environment variable turned into a file) is a change of that secret.
  const namesA = (a.credentialNames ?? {}) as Record<string, unknown>;
  const namesB = (b.credentialNames ?? {}) as Record<string, unknown>;
  for (const k of CREDENTIALS) if (!same(namesA[k], namesB[k]) && !out.includes(k)) out.push(k);
  return out.sort();
}

export function diffConfig(old: Config, next: Config): ConfigChanges {
  const before = new Map(old.sources.map((s) => [s.name, s]));
  const after = new Map(next.sources.map((s) => [s.name, s]));
  const changes: ConfigChanges = {
    added: next.sources.filter((s) => !before.has(s.name)).map((s) => s.name),
    removed: old.sources.filter((s) => !after.has(s.name)).map((s) => s.name),
    changed: {},
    settings: [],
    needsRestart: [],
  };
  for (const s of next.sources) {
    const was = before.get(s.name);
    if (!was) continue;
    const keys = changedSettings(was, s);
    if (keys.length > 0) changes.changed[s.name] = keys;
  }
  for (const key of RESTART_TOP) if (!same(old[key], next[key])) changes.needsRestart.push(key);
  for (const section of SECTIONS) {
    const a = old[section] as Record<string, unknown>;
    const b = next[section] as Record<string, unknown>;
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
      if (same(a[key], b[key])) continue;
      (isRestartOnly(section, key) ? changes.needsRestart : changes.settings).push(`${section}.${key}`);
    }
  }
  return changes;
}

export function hasChanges(c: ConfigChanges): boolean {
  return c.added.length + c.removed.length + Object.keys(c.changed).length + c.settings.length > 0;
}

/** The new configuration with every setting that needs a restart kept as it runs now. */
export function keepRestartSettings(old: Config, next: Config): Config {
  const out = { ...next } as Record<string, unknown>;
  const running = old as unknown as Record<string, unknown>;
  for (const key of RESTART_TOP) {
    if (running[key] === undefined) delete out[key];
    else out[key] = running[key];
  }
  for (const section of SECTIONS) {
    const a = old[section] as Record<string, unknown>;
    const b = next[section] as Record<string, unknown>;
    out[section] = Object.fromEntries(
      [...new Set([...Object.keys(a), ...Object.keys(b)])].map((k) => [k, isRestartOnly(section, k) ? a[k] : b[k]]),
    );
  }
  return out as unknown as Config;
}

/** One line for the log: names only. */
export function describeChanges(c: ConfigChanges): string {
  const parts: string[] = [];
  if (c.added.length > 0) parts.push(`sources added: ${c.added.join(', ')}`);
  if (c.removed.length > 0) parts.push(`sources removed: ${c.removed.join(', ')}`);
  const changed = Object.entries(c.changed);
  if (changed.length > 0) parts.push(`sources changed: ${changed.map(([name, keys]) => `${name} (${keys.join(', ')})`).join(', ')}`);
  if (c.settings.length > 0) parts.push(`settings changed: ${c.settings.join(', ')}`);
  return parts.join('; ');
}
