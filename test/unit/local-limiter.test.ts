import { describe, expect, it } from 'vitest';
import { LimiterRegistry, LocalLimiter, type LimiterClock } from '../../src/api/limiter.ts';

/** Lets the event loop turn once, so jobs started together overlap. */
const yieldOnce = () => new Promise((r) => setImmediate(r));

/**
 * A clock that stands still while jobs run. Each waiting job is woken in turn,
 * earliest wake-up first, with the clock moved to its wake-up time.
 */
function manualClock(): LimiterClock & { wakeNext(): Promise<boolean> } {
  let ms = 1_000_000;
  const sleepers: Array<{ at: number; wake: () => void }> = [];
  return {
    now: () => ms,
    sleep: (wait) => new Promise<void>((wake) => sleepers.push({ at: ms + wait, wake })),
    async wakeNext() {
      await yieldOnce();
      sleepers.sort((a, b) => a.at - b.at);
      const next = sleepers.shift();
      if (!next) return false;
      ms = next.at;
      next.wake();
      return true;
    },
  };
}

describe('local limiter', () => {
  it('runs at most maxConcurrent jobs at once, in arrival order', async () => {
    const limiter = new LocalLimiter({ maxConcurrent: 2, minTimeMs: 0 });
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const job = (i: number) => async () => {
      started.push(i);
      running++;
      peak = Math.max(peak, running);
      await yieldOnce();
      running--;
      return i;
    };
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => limiter.schedule(job(i))));
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('spaces job starts by minTimeMs', async () => {
    const clock = manualClock();
    const limiter = new LocalLimiter({ maxConcurrent: 4, minTimeMs: 30 }, clock);
    const starts: number[] = [];
    const all = Promise.all([0, 1, 2].map(() => limiter.schedule(async () => void starts.push(clock.now()))));
    for (let i = 0; i < 10 && (await clock.wakeNext()); i++);
    await all;
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(25);
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(25);
  });

  it('frees the slot of a job that throws', async () => {
    const limiter = new LocalLimiter({ maxConcurrent: 1, minTimeMs: 0 });
    await expect(limiter.schedule(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.schedule(async () => 'next')).resolves.toBe('next');
  });

  it('gives every user of one key the same limiter when no Redis is configured', async () => {
    const registry = new LimiterRegistry();
    expect(registry.get('k', { maxConcurrent: 1, minTimeMs: 0 })).toBe(registry.get('k', { maxConcurrent: 1, minTimeMs: 0 }));
    await registry.close();
  });
});
