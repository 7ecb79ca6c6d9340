/**
 * A table's policy as pmsync stores it (pmsync.privacy_policies): the rule of
 * each typed column with the raw paths it reaches, the rules of raw fields
 * named on their own, the fields raw keeps, and the fingerprint of the hash
 * key, never the key. Comparing the stored policy with the configured one says
 * what can be rewritten in place (the stricter part) and what needs the
 * records read again (the looser part). Pure.
 */
import { KEEP, parseRule, type Rule } from '../config/privacy.ts';
import { compareRules } from './rules.ts';

export interface StoredPolicy {
  /** 'all', or the dotted paths of the fields raw keeps. */
  raw: 'all' | string[];
  /** Typed column to its rule and the raw paths it reaches, for rules other than keep. */
  columns: Record<string, { rule: string; reads: string[] }>;
  /** `<table>.raw.<field>` rules other than keep, by dotted path. */
  fields: Record<string, string>;
  /** Fingerprint of the hash key when a rule hashes, else null. */
  key: string | null;
}

/** What pmsync wrote before column policies existed, and what a table without a stored policy holds. */
export const OPEN_STORED: StoredPolicy = { raw: 'all', columns: {}, fields: {}, key: null };

const sortedKeys = <T>(o: Record<string, T>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** One text per policy, whatever the order it was built in: what the stored and the configured policy are compared by. */
export function canonical(p: StoredPolicy): string {
  return JSON.stringify({
    raw: p.raw === 'all' ? 'all' : [...p.raw].sort(),
    columns: sortedKeys(Object.fromEntries(Object.entries(p.columns).map(([c, v]) => [c, { rule: v.rule, reads: [...v.reads].sort() }]))),
    fields: sortedKeys(p.fields),
    key: p.key,
  });
}

/** A stored policy read back from the database; the open one when there is none. */
export function storedFrom(value: unknown): StoredPolicy {
  const v = value as Partial<StoredPolicy> | null | undefined;
  if (!v || typeof v !== 'object') return OPEN_STORED;
  return {
    raw: Array.isArray(v.raw) ? v.raw.map(String) : 'all',
    columns: { ...(v.columns ?? {}) },
    fields: { ...(v.fields ?? {}) },
    key: typeof v.key === 'string' ? v.key : null,
  };
}

export interface PolicyChange {
  /** What to rewrite in what is stored: typed columns, raw paths (dotted), and the fields raw may keep when some must go. */
  rewrite: { columns: string[]; paths: string[]; prune: string[] | null };
  /** What cannot be rewritten, in words ("customers.email: hash -> keep"), for the message asking for the records again. */
  looser: string[];
}

const ruleOf = (text: string | undefined): Rule => (text === undefined ? KEEP : (parseRule(text) ?? KEEP));
const ruleName = (r: Rule) => (r.kind === 'prefix' ? `prefix:${r.length}` : r.kind);

export function isEmptyChange(c: PolicyChange): boolean {
  return c.rewrite.columns.length === 0 && c.rewrite.paths.length === 0 && c.rewrite.prune === null && c.looser.length === 0;
}

/** How to go from the stored policy of `table` to the configured one. */
export function policyChange(before: StoredPolicy, after: StoredPolicy, table: string): PolicyChange {
  // A key is compared only where both policies hash: a policy without hash rules stores no fingerprint.
  const sameKey = before.key === null || after.key === null || before.key === after.key;
  const change: PolicyChange = { rewrite: { columns: [], paths: [], prune: null }, looser: [] };
  const paths = new Set<string>();
  const looser = (name: string, a: Rule, b: Rule) =>
    change.looser.push(`${name}: ${ruleName(a) === ruleName(b) ? 'hashed with another key' : `${ruleName(a)} -> ${ruleName(b)}`}`);

  for (const column of [...new Set([...Object.keys(before.columns), ...Object.keys(after.columns)])].sort()) {
    const was = before.columns[column];
    const now = after.columns[column];
    const a = ruleOf(was?.rule);
    const b = ruleOf(now?.rule);
    const how = compareRules(a, b, sameKey);
    if (how === 'stricter') {
      change.rewrite.columns.push(column);
      for (const p of now!.reads) paths.add(p);
    } else if (how === 'looser') looser(`${table}.${column}`, a, b);
    else if (now) {
      // The same rule now reaching another raw field (a `columns` remap): that field was stored as it came.
      for (const p of now.reads) if (!was?.reads.includes(p)) paths.add(p);
    }
  }
  for (const field of [...new Set([...Object.keys(before.fields), ...Object.keys(after.fields)])].sort()) {
    const a = ruleOf(before.fields[field]);
    const b = ruleOf(after.fields[field]);
    const how = compareRules(a, b, sameKey);
    if (how === 'stricter') paths.add(field);
    else if (how === 'looser') looser(`${table}.raw.${field}`, a, b);
  }
  change.rewrite.paths = [...paths].sort();

  if (after.raw !== 'all') {
    const kept = new Set(after.raw);
    if (before.raw === 'all' || before.raw.some((p) => !kept.has(p))) change.rewrite.prune = [...after.raw];
    const added = before.raw === 'all' ? [] : after.raw.filter((p) => !(before.raw as string[]).includes(p));
    if (added.length > 0) change.looser.push(`${table} raw now also keeps ${added.join(', ')}`);
  } else if (before.raw !== 'all') {
    change.looser.push(`${table} raw: declared -> all`);
  }
  return change;
}
