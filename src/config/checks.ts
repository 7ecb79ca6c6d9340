/**
 * The checks of the configuration that no schema can make: across sources
 * (a name used twice, two sources reading one account, a shared gateway key
 * with different quotas), of a source's URL and credentials, and against the
 * streams (resource names, schedule overrides, table and column settings,
 * column policies). Each problem names where it was configured.
 */
import { suggestion } from '../strict-schema.ts';
import { insecureHttpHost } from './insecure-http.ts';
import type { PrivacySection, Rule } from './privacy.ts';
import type { RestSourceConfig, SourceConfig } from './schema.ts';

/**
 * What the checks need to know of the streams a configuration names: the
 * resources of each API kind, and the checks of the settings that name
 * tables, columns and raw fields. The entry point hands it in
 * (src/sync/stream-registry.ts), so the configuration is checked against the
 * streams without importing them.
 */
export interface StreamRegistry {
  /** The resources an API kind serves. */
  resourceNames(kind: SourceConfig['kind']): string[];
  /** Problems of a source's `columns` and `history` settings. */
  tableProblems(source: SourceConfig): string[];
  /** Problems of one `privacy.columns` section: a source's against its own tables, the top level's (no source) against every kind's. */
  privacyColumnProblems(columns: Record<string, Rule>, where: string, source?: SourceConfig): string[];
  /** Problems of a source's column policies as a whole: the personal default where it does not fit, a hash without a key. */
  sourcePrivacyProblems(source: SourceConfig): string[];
}

/** The sources of a configuration as loaded, with what their checks need to know of where each came from. */
export interface LoadedSources {
  /** The config file as read, before its schema: entries that fail it are still checked. */
  fileInput: unknown;
  /** The sources that passed their schema, secrets read and budgets resolved. */
  sources: SourceConfig[];
  /** The entry of the file each source came from; the CORE_* source has none. */
  entryOf: Map<SourceConfig, number>;
  /** Each source's own `privacy` section, as written. */
  ownPrivacy: Map<SourceConfig, PrivacySection>;
  /** The config file, as messages name it. */
  file: string;
}

/** Every problem of the sources, in the order an operator reads the file. */
export function sourceProblems({ fileInput, sources, entryOf, ownPrivacy, file }: LoadedSources, streams: StreamRegistry): string[] {
  const problems: string[] = [];
  const declared = declaredSources(fileInput, sources);
  problems.push(...resourceProblems(declared, file, streams));
  problems.push(...overrideProblems(rawOverrides(fileInput), declared, file, streams));

  const whereOf = (s: SourceConfig) => {
    const entry = entryOf.get(s);
    return `source "${s.name}" (${entry === undefined ? 'CORE_* environment variables' : `sources[${entry}]`})`;
  };
  const seen = new Set<string>();
  for (const s of sources) {
    const where = whereOf(s);
    if (seen.has(s.name)) problems.push(`${where}: the name is used twice`);
    seen.add(s.name);
    problems.push(...checkSource(s, entryOf.has(s)).map((p) => `${where}: ${p}`));
    problems.push(...streams.tableProblems(s).map((p) => `${where}: ${p}`));
    const own = ownPrivacy.get(s);
    if (own) problems.push(...streams.privacyColumnProblems(own.columns, 'privacy', s).map((p) => `${where}: ${p}`));
    problems.push(...streams.sourcePrivacyProblems(s).map((p) => `${where}: ${p}`));
  }
  const sameAccount = sameAccountPairs(sources, streams);
  problems.push(...sameAccount.map((pair) => describeSameAccount(pair, whereOf)));
  problems.push(...checkSharedKeys(sources, sameAccount));
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
function sameAccountPairs(sources: SourceConfig[], streams: StreamRegistry): SameAccount[] {
  // Grouped by account first: each source's URL parsed once, and only sources of one account compared (a fleet's
  // thousands of sources compared pairwise took seconds at every start and reload).
  const byAccount = new Map<string, SourceConfig[]>();
  for (const s of sources) {
    const account = accountOf(s);
    if (account === undefined) continue;
    const group = byAccount.get(account);
    if (group) group.push(s);
    else byAccount.set(account, [s]);
  }
  const read = (s: SourceConfig) => s.streams ?? streams.resourceNames(s.kind);
  const pairs: SameAccount[] = [];
  for (const group of byAccount.values()) {
    group.forEach((a, i) => {
      for (const b of group.slice(i + 1)) {
        const common = read(a).filter((r) => read(b).includes(r));
        if (common.length > 0) pairs.push({ a, b, common });
      }
    });
  }
  // In the order the sources are listed, as the pairs were found before.
  const order = new Map(sources.map((s, i) => [s, i]));
  return pairs.sort((x, y) => order.get(x.a)! - order.get(y.a)! || order.get(x.b)! - order.get(y.b)!);
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
  for (const s of sources) {
    if (s.kind === 'pro' || !s.apikey) continue;
    const group = byKey.get(s.apikey);
    if (group) group.push(s);
    else byKey.set(s.apikey, [s]);
  }
  const refused = new Map<SourceConfig, Set<SourceConfig>>();
  for (const p of sameAccount) refused.set(p.a, (refused.get(p.a) ?? new Set()).add(p.b));
  const problems: string[] = [];
  for (const group of byKey.values()) {
    const [first, ...rest] = group;
    for (const other of rest) {
      // A pair refused as one account is told to keep one source, not to align two.
      if (refused.get(first!)?.has(other)) continue;
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
function resourceProblems(declared: DeclaredSource[], file: string, streams: StreamRegistry): string[] {
  const problems: string[] = [];
  for (const d of declared) {
    const known = streams.resourceNames(d.kind);
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
function overrideProblems(
  overrides: Array<{ source?: string; resource?: string }>,
  declared: DeclaredSource[],
  file: string,
  streams: StreamRegistry,
): string[] {
  const problems: string[] = [];
  const names = declared.flatMap((d) => (d.name === undefined ? [] : [d.name]));
  const resourcesOf = (d: DeclaredSource) => {
    const all = streams.resourceNames(d.kind);
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

/** Problems of one source's own settings: its URL, credentials and budget. */
export function checkSource(s: SourceConfig, fromFile: boolean): string[] {
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
          `Use https://, or, only where the network to the API is trusted (a private link or VPN), ${fromFile ? FILE_OPT_IN : ENV_OPT_IN}`,
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
