/**
 * The `privacy` settings, top level and per source, as written and as
 * resolved: which policy each column or raw field gets, the default for
 * personal columns, what `raw` keeps, and the hash key. The schema of the
 * section is in schema.ts; the checks against the stream declarations are in
 * src/sync/privacy.ts (handed to loadConfig with the stream registry).
 *
 *   "privacy": {
 *     "key": { "env": "PMSYNC_HASH_KEY" },
 *     "columns": { "personal": "hash", "customers.birthday": "year", "customers.raw.Notes": "drop" },
 *     "raw": "declared"
 *   }
 *
 * `"columns": "personal:hash"` is short for `{ "personal": "hash" }`. A
 * source's own `privacy` is laid over the top-level one: its key and `raw`
 * replace the top level's, its `columns` entries are added to (and win over)
 * the top level's.
 */
import { suggestion } from '../strict-schema.ts';
import { resolveSecret, type SecretLookup } from './secrets.ts';

/**
 * A column policy as written: keep, drop, hash, year or prefix:N. What each
 * does to a value is src/privacy/rules.ts.
 */
export type Rule = { kind: 'keep' } | { kind: 'drop' } | { kind: 'hash' } | { kind: 'year' } | { kind: 'prefix'; length: number };

export const KEEP: Rule = { kind: 'keep' };
export const RULE_NAMES = ['keep', 'drop', 'hash', 'year', 'prefix:N'] as const;
const MAX_PREFIX = 1000;

/** "keep", "drop", "hash", "year" or "prefix:N"; null for anything else. */
export function parseRule(text: string): Rule | null {
  if (text === 'keep' || text === 'drop' || text === 'hash' || text === 'year') return { kind: text };
  const m = /^prefix:(\d{1,4})$/.exec(text);
  if (m && Number(m[1]) >= 1 && Number(m[1]) <= MAX_PREFIX) return { kind: 'prefix', length: Number(m[1]) };
  return null;
}

export function ruleText(rule: Rule): string {
  return rule.kind === 'prefix' ? `prefix:${rule.length}` : rule.kind;
}

export type RawMode = 'all' | 'declared';

export interface PrivacySettings {
  /** The hash key; null when none is configured. */
  key: string | null;
  /** `<table>.<column>` and `<table>.raw.<field>` entries. */
  columns: Record<string, Rule>;
  /** The policy of every personal column not named in `columns`. */
  personal: Rule | null;
  raw: RawMode;
}

export const OPEN_PRIVACY: PrivacySettings = { key: null, columns: {}, personal: null, raw: 'all' };

/** One `privacy` section, its key aside (read like every secret, by readPrivacy). */
export interface PrivacySection {
  columns: Record<string, Rule>;
  personal: Rule | null;
  raw?: RawMode;
}

/** The name of the default for personal columns in `columns`. */
export const PERSONAL = 'personal';

function ruleProblem(text: string): string {
  const names = RULE_NAMES.map((n) => n.replace(':N', ''));
  const near = suggestion(text.replace(/:.*$/, ''), names);
  return `"${text}" is not a policy: use keep, drop, hash, year or prefix:N (N from 1 to 1000, e.g. prefix:3)${near.startsWith(' (did') ? near : ''}`;
}

/** Parses `columns` as written (a map, or "personal:<policy>"), adding a problem for each entry that is not a policy. */
export function parseColumns(input: string | Record<string, string> | undefined, where: string, problems: string[]): PrivacySection {
  const out: PrivacySection = { columns: {}, personal: null };
  if (input === undefined) return out;
  const entries: Array<[string, string]> =
    typeof input === 'string'
      ? input.startsWith(`${PERSONAL}:`)
        ? [[PERSONAL, input.slice(PERSONAL.length + 1)]]
        : []
      : Object.entries(input);
  if (typeof input === 'string' && entries.length === 0) {
    problems.push(`${where}.columns: "${input}" must be a map of columns to policies, or "${PERSONAL}:<policy>" (e.g. "${PERSONAL}:hash")`);
    return out;
  }
  for (const [name, text] of entries) {
    const rule = parseRule(text);
    if (!rule) {
      problems.push(`${where}.columns: "${name}": ${ruleProblem(text)}`);
      continue;
    }
    if (name === PERSONAL) out.personal = rule;
    else out.columns[name] = rule;
  }
  return out;
}

/** A source's settings: its own section laid over the top-level one. */
export function mergePrivacy(top: PrivacySection | undefined, own: PrivacySection | undefined, key: string | null): PrivacySettings {
  return {
    key,
    columns: { ...top?.columns, ...own?.columns },
    personal: own?.personal ?? top?.personal ?? null,
    raw: own?.raw ?? top?.raw ?? 'all',
  };
}

/** Minimum length of a hash key: shorter keys are refused at start-up. */
export const MIN_KEY_LENGTH = 32;

/** A problem with a configured key (too short to resist guessing), or null. */
export function keyProblem(key: string, where: string): string | null {
  if (key.length >= MIN_KEY_LENGTH) return null;
  return `${where}: the hash key is ${key.length} characters long: use at least ${MIN_KEY_LENGTH} random characters (e.g. "openssl rand -hex 32")`;
}

const HASH_KEY_WHAT = 'the secret key column policies hash with';

/**
 * A `privacy` section as written (top level or a source's), its key read like
 * every secret. Read from the raw input, so a file failing its schema
 * elsewhere is still checked here; shapes the schema refuses are skipped.
 */
export function readPrivacy(
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
