/**
 * Strict configuration objects. A key the schema does not know is refused,
 * never ignored: a typo such as `dailyQuotaa` would otherwise leave the
 * default in force without a word. The refusal names the closest known key.
 *
 * The known keys are read from the object's own shape, so a key added to any
 * schema is accepted with no list to keep in step.
 */
import { z } from 'zod';

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) d[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[s.length]![t.length]!;
}

/**
 * The candidate closest to `word`, if one is close enough to be a likely typo:
 * a few edits away, or the start of it (`horizon` for `horizonDays`).
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const prefix = word.length >= 4 && name.toLowerCase().startsWith(word.toLowerCase());
    const distance = prefix ? Math.min(limit, editDistance(word, name)) : editDistance(word, name);
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** ` (did you mean "x"?)` or, with no close candidate, the known names. */
export function suggestion(word: string, candidates: readonly string[]): string {
  const near = closest(word, candidates);
  if (near) return ` (did you mean "${near}"?)`;
  return candidates.length > 0 ? ` (known: ${candidates.join(', ')})` : '';
}

/**
 * For a name given on the command line that matches nothing: the likely typo,
 * and always every valid name, so the answer is on screen.
 */
export function validNames(word: string, candidates: readonly string[], what: string): string {
  const near = closest(word, candidates);
  const mean = near ? ` (did you mean "${near}"?)` : '';
  return `${mean}; ${candidates.length > 0 ? `${what}: ${candidates.join(', ')}` : `no ${what} configured`}`;
}

export function unknownKeysMessage(keys: readonly string[], known: readonly string[]): string {
  return keys.map((k) => `unknown key "${k}"${suggestion(k, known)}`).join('; ');
}

/** z.strictObject whose unknown-key error names the closest known key. */
export function strictObject<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? unknownKeysMessage(issue.keys, known) : undefined),
  });
}
