/**
 * The limiter without Redis: Bottleneck on its local datastore, one per
 * gateway key. Checks concurrency, spacing and order by counting overlaps and
 * recording start order, never by measuring durations.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LimiterRegistry, type LimiterSettings } from '../../src/api/limiter.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Jobs that record their start order and the most of them running at once. */
function tracker(jobMs = 30) {
  let running = 0;
  let peak = 0;
  const started: number[] = [];
  const job = (i: number) => async () => {
    started.push(i);
    running++;
    peak = Math.max(peak, running);
    await sleep(jobMs);
    running--;
    return i;
  };
  return { job, started, peak: () => peak };
}

let registry: LimiterRegistry;
beforeEach(() => {
  registry = new LimiterRegistry();
});
afterEach(async () => {
  await registry.close();
});
const limiter = (settings: LimiterSettings, key = 'k') => registry.get(key, settings);

describe('limiter without Redis', () => {
  it('runs at most maxConcurrent jobs at once, in arrival order', async () => {
    const l = limiter({ maxConcurrent: 2, minTimeMs: 0 });
    const t = tracker();
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => l.schedule(t.job(i))));
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    expect(t.peak()).toBe(2);
    expect(t.started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('spaces job starts by minTimeMs: jobs shorter than the spacing never overlap, in arrival order', async () => {
    // Each job's own timer (25 ms) is set after the limiter's timer for the next start (100 ms), yet expires first.
    const spaced = tracker(25);
    const l = limiter({ maxConcurrent: 4, minTimeMs: 100 }, 'spaced');
    await Promise.all([0, 1, 2, 3].map((i) => l.schedule(spaced.job(i))));
    expect(spaced.peak()).toBe(1);
    expect(spaced.started).toEqual([0, 1, 2, 3]);

    // The same jobs without spacing overlap up to maxConcurrent: what minTimeMs prevents.
    const unspaced = tracker(25);
    const u = limiter({ maxConcurrent: 4, minTimeMs: 0 }, 'unspaced');
    await Promise.all([0, 1, 2, 3].map((i) => u.schedule(unspaced.job(i))));
    expect(unspaced.peak()).toBe(4);
  });

  it('passes a job error to its caller unchanged and frees its slot', async () => {
    const l = limiter({ maxConcurrent: 1, minTimeMs: 0 });
    const boom = new Error('boom');
    const failing = l.schedule(async () => Promise.reject(boom));
    const queued = l.schedule(async () => 'next');
    await expect(failing).rejects.toBe(boom);
    await expect(queued).resolves.toBe('next');
    await expect(l.schedule(async () => 'after')).resolves.toBe('after');
  });

  it('gives every user of one key the same limiter, and each key its own', async () => {
    const a = limiter({ maxConcurrent: 1, minTimeMs: 0 }, 'a');
    expect(limiter({ maxConcurrent: 1, minTimeMs: 0 }, 'a')).toBe(a);

    const sameKey = tracker();
    const a2 = limiter({ maxConcurrent: 1, minTimeMs: 0 }, 'a');
    await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? a : a2).schedule(sameKey.job(i))));
    expect(sameKey.peak()).toBe(1);

    const twoKeys = tracker();
    const b = limiter({ maxConcurrent: 1, minTimeMs: 0 }, 'b');
    await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? a : b).schedule(twoKeys.job(i))));
    expect(twoKeys.peak()).toBe(2);
  });
});

describe("Bottleneck's in-process datastore", () => {
  it('yields to the event loop without a timer when no delay is asked, and with one when it is', async () => {
    // @ts-expect-error Bottleneck ships no types for its internal modules.
    const { default: LocalDatastore } = await import('bottleneck/lib/LocalDatastore.js');
    const store = { Promise };
    const yieldLoop = LocalDatastore.prototype.yieldLoop as (this: typeof store, t?: number) => Promise<void>;
    let timers = 0;
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      timers++;
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout;
    try {
      await yieldLoop.call(store, 0);
      await yieldLoop.call(store);
      expect(timers).toBe(0);
      await yieldLoop.call(store, 1);
      expect(timers).toBe(1);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
  });
});
