/**
 * Text PostgreSQL cannot store. A text column refuses the NUL character, and
 * jsonb refuses both NUL (`\u0000`) and UTF-16 surrogates that are not part of
 * a pair, which JSON.stringify writes as `\udXXX` escapes. One such character
 * anywhere in a statement's parameter fails the whole statement, so values
 * from the outside world are checked here before they reach SQL.
 */

/** NUL, or a surrogate half without its partner. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Records are flat; a value nested deeper than this is treated as unstorable
 * rather than walked (or serialised) until the stack runs out.
 */
export const MAX_JSON_DEPTH = 64;

export function isStorableText(s: string): boolean {
  UNSTORABLE.lastIndex = 0;
  return !UNSTORABLE.test(s);
}

/** The string with every unstorable character written out as its `\uXXXX` escape, as visible text. */
export function storableText(s: string): string {
  return s.replace(UNSTORABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Where a JSON value holds text PostgreSQL cannot store, as paths such as
 * `FirstName` or `Notes[2]` (keys count too). Empty when it can be stored as is.
 */
export function unstorablePaths(value: unknown, path = '', out: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') {
    if (!isStorableText(value)) out.push(path || '(value)');
    return out;
  }
  if (value === null || typeof value !== 'object') return out;
  if (depth >= MAX_JSON_DEPTH) {
    out.push(`${path || '(value)'} (nested more than ${MAX_JSON_DEPTH} levels deep)`);
    return out;
  }
  if (Array.isArray(value)) value.forEach((v, i) => unstorablePaths(v, `${path}[${i}]`, out, depth + 1));
  else {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${storableText(k)}` : storableText(k);
      if (!isStorableText(k)) out.push(`${at} (key)`);
      unstorablePaths(v, at, out, depth + 1);
    }
  }
  return out;
}

/**
 * A deep copy of a JSON value that PostgreSQL accepts: unstorable characters
 * in strings and keys written out (see storableText), anything nested too
 * deep replaced by a note.
 */
export function storableJson(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_JSON_DEPTH) return `[nested more than ${MAX_JSON_DEPTH} levels deep; not kept]`;
  if (Array.isArray(value)) return value.map((v) => storableJson(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[storableText(k)] = storableJson(v, depth + 1);
  return out;
}
