/**
 * Column policies, the values side: what each policy does to one value, how
 * values are normalised before they are hashed, and which change of policy
 * can be applied to what is already stored. Pure: no database.
 *
 * - keep: stored as received.
 * - drop: never stored (the raw field is removed, the typed column is null).
 * - hash: HMAC-SHA-256 under the operator's secret key, of the value
 *   normalised for its kind, written as 64 lowercase hex characters. Equal
 *   values hash equal in every table and every source sharing the key, so
 *   joins still work; without the key nobody can test guesses (all ten-digit
 *   phone numbers, every birthday) against the stored hashes.
 * - year: a date reduced to the first day of its year (1984-07-02 becomes
 *   1984-01-01, a date-time 1984-01-01T00:00:00).
 * - prefix:N: the first N characters of a text.
 *
 * A policy is written, parsed and printed (Rule, parseRule, ruleText) in
 * src/config/privacy.ts, with the rest of the privacy settings.
 */
import { createHmac } from 'node:crypto';
import { ruleText, type Rule } from '../config/privacy.ts';
import { toDate, toTimestamp } from '../mappers/common.ts';

/**
 * What a personal column holds, which decides how its values are normalised
 * before hashing (and lets the docs say what the column is).
 */
export type PersonalKind = 'name' | 'email' | 'phone' | 'birth date' | 'free text';

/** How a value is normalised before hashing: a personal kind, or plain text for other fields. */
export type Normalise = PersonalKind | 'text';

/**
 * The form hashed: emails trimmed and lower-cased, phone numbers reduced to
 * their digits, names trimmed, with runs of spaces made one and lower-cased;
 * other text trimmed. Unicode is put in NFC first, so "é" typed two ways hashes
 * the same. A value that is not a string is hashed as its JSON text.
 */
export function normalised(value: unknown, how: Normalise): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  const v = value.normalize('NFC').trim();
  switch (how) {
    case 'email':
      return v.toLowerCase();
    case 'phone':
      return v.replace(/\D+/g, '');
    case 'name':
      return v.replace(/\s+/g, ' ').toLowerCase();
    default:
      return v;
  }
}

/** The hash of one value under a key, as 64 lowercase hex characters. */
export function hmacHex(key: string, text: string): string {
  return createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

/**
 * Identifies a key without revealing it: the HMAC of a fixed text under the
 * key. Stored with the policy, so a changed key is noticed; the key itself is
 * never stored.
 */
export function keyFingerprint(key: string): string {
  return hmacHex(key, 'pmsync privacy key fingerprint').slice(0, 16);
}

/** What a value is, for `year`: a date column's value, a date-time column's, or a raw field of unknown shape. */
export type ValueShape = 'date' | 'timestamp' | 'text' | 'any';

const REMOVED = Symbol('removed');
export type Applied = unknown | typeof REMOVED;

/** The rule applied to one present, non-null value: the value to store, or `removed` when nothing may be stored. */
export function applyRule(rule: Rule, value: unknown, shape: ValueShape, how: Normalise, key: string | null): Applied {
  switch (rule.kind) {
    case 'keep':
      return value;
    case 'drop':
      return REMOVED;
    case 'hash':
      // Configuration checks refuse hash rules without a key; this is a last guard, never a silent keep.
      if (key === null) return REMOVED;
      return hmacHex(key, normalised(value, how));
    case 'prefix':
      return Array.from(typeof value === 'string' ? value : JSON.stringify(value))
        .slice(0, rule.length)
        .join('');
    case 'year': {
      const year = yearOf(value, shape);
      if (year === null) return REMOVED;
      return shape === 'timestamp' ? `${year}-01-01T00:00:00` : `${year}-01-01`;
    }
  }
}

export function isRemoved(v: Applied): v is typeof REMOVED {
  return v === REMOVED;
}

/** The year of a date or date-time as the column would store it; null when the value is not one. */
function yearOf(value: unknown, shape: ValueShape): string | null {
  if (typeof value !== 'string') return null;
  // The year of the stored value: a date-time with an offset is converted to UTC first, as its column is.
  const stored = shape === 'timestamp' ? toTimestamp(value) : /^\d{4}-\d{2}-\d{2}/.test(value) ? toDate(value) : null;
  return stored && /^\d{4}-/.test(stored) ? stored.slice(0, 4) : null;
}

/** How a change of one policy relates to the stored values. */
export type Change = 'same' | 'stricter' | 'looser';

/**
 * A stricter policy can be applied to the stored values themselves (a clear
 * value hashed, a prefix shortened, anything dropped); any other change
 * (less is dropped, a hash turned into a prefix, another key) needs the
 * values as the API sends them, so the records must be read again.
 */
export function compareRules(before: Rule, after: Rule, sameKey: boolean): Change {
  if (ruleText(before) === ruleText(after)) return after.kind === 'hash' && !sameKey ? 'looser' : 'same';
  if (after.kind === 'drop' || before.kind === 'keep') return 'stricter';
  if (before.kind === 'prefix' && after.kind === 'prefix' && after.length < before.length) return 'stricter';
  return 'looser';
}

/** Of two rules reaching one value, the one that keeps less (drop, then hash, prefix, year). */
export function stricterOf(a: Rule, b: Rule): Rule {
  const rank = (r: Rule) => ['drop', 'hash', 'prefix', 'year', 'keep'].indexOf(r.kind);
  if (a.kind === 'prefix' && b.kind === 'prefix') return a.length <= b.length ? a : b;
  return rank(a) <= rank(b) ? a : b;
}
