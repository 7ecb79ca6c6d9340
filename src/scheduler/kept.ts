/**
 * Results kept with the object they were derived from, for the plan's inputs
 * that a wake's probes ask again and again: at each probe of a source
 * (src/scheduler/wake.ts) the same readings and models give the same stream
 * forecasts, evidence and corrections, and only the instant moves. Each
 * result is kept beside the rest of the arguments it was computed from and
 * handed back only when all of them are equal, so a kept result is the one a
 * fresh computation would give; the object it is kept with holds it no longer
 * than itself (a WeakMap), and at most KEPT_PER_KEY of them, the latest. Two:
 * a stream's forecast is asked for at the instant planned and at the instant
 * its source was read (the practice's excess, observe.ts), and a fleet keeps
 * every stream's model, so each more kept is a week of rates more for every
 * stream of every source.
 */
export const KEPT_PER_KEY = 2;

export function keptWith<K extends object, E>(cache: WeakMap<K, E[]>, key: K, matches: (e: E) => boolean, make: () => E): E {
  let list = cache.get(key);
  if (list) {
    for (const e of list) if (matches(e)) return e;
  } else {
    list = [];
    cache.set(key, list);
  }
  const made = make();
  if (list.length >= KEPT_PER_KEY) list.shift();
  list.push(made);
  return made;
}

/** One result derived from `key` alone, kept with it (a WeakMap): for inputs that are never written into. */
export function derivedFrom<K extends object, V>(cache: WeakMap<K, V>, key: K, make: (key: K) => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make(key);
    cache.set(key, value);
  }
  return value;
}
