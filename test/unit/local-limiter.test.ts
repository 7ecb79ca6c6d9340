import { describe, expect, it } from 'vitest';
import { LimiterRegistry, LocalLimiter } from '../../src/api/limiter.ts';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

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
      await tick();
      running--;
      return i;
    };
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => limiter.schedule(job(i))));
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('spaces job starts by minTimeMs', async () => {
    const limiter = new LocalLimiter({ maxConcurrent: 4, minTimeMs: 30 });
    const starts: number[] = [];
    await Promise.all([0, 1, 2].map(() => limiter.schedule(async () => void starts.push(Date.now()))));
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
