/**
 * The `privacy` settings, top level and per source, as written and as
 * resolved: which policy each column or raw field gets, the default for
 * personal columns, what `raw` keeps, and the hash key. The schema of the
 * section is in src/config/schema.ts; the checks against the stream declarations
 * are in src/sync/privacy.ts.
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
import { parseRule, RULE_NAMES, type Rule } from './rules.ts';

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

/** One `privacy` section, its key aside (resolved like every secret, in src/config/load.ts). */
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
