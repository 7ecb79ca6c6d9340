/**
 * Replicas share one limiter per gateway key through Redis (Bottleneck's
 * ioredis datastore). Needs the Redis at REDIS_URL (default
 * redis://127.0.0.1:6379); skipped, saying so, when none answers.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { LimiterRegistry } from '../../src/api/limiter.ts';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

async function redisAnswers(): Promise<boolean> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

const up = await redisAnswers();
if (!up) console.warn(`limiter-redis: skipped, no Redis answers at ${REDIS_URL}`);

/** Runs `n` jobs through a limiter; returns the highest number running at once across all callers. */
function tracker() {
  let running = 0;
  let peak = 0;
  const job = async () => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 15));
    running--;
  };
  return { job, peak: () => peak };
}

const registries: LimiterRegistry[] = [];
afterAll(async () => {
  await Promise.all(registries.map((r) => r.close()));
});

describe.skipIf(!up)('shared limiter through Redis', () => {
  it('two replicas together never run more than maxConcurrent requests for one key', async () => {
    const key = `k_${randomBytes(6).toString('hex')}`;
    const a = new LimiterRegistry(REDIS_URL);
    const b = new LimiterRegistry(REDIS_URL);
    registries.push(a, b);
    const t = tracker();
    const la = a.get(key, { maxConcurrent: 1, minTimeMs: 0 });
    const lb = b.get(key, { maxConcurrent: 1, minTimeMs: 0 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? la : lb).schedule(t.job)));
    expect(t.peak()).toBe(1);
  });

  it('the same two callers without Redis each have their own limiter (what sharing prevents)', async () => {
    const a = new LimiterRegistry();
    const b = new LimiterRegistry();
    registries.push(a, b);
    const t = tracker();
    const la = a.get('k', { maxConcurrent: 1, minTimeMs: 0 });
    const lb = b.get('k', { maxConcurrent: 1, minTimeMs: 0 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? la : lb).schedule(t.job)));
    expect(t.peak()).toBe(2);
  });

  it('different keys do not share a limiter', async () => {
    const a = new LimiterRegistry(REDIS_URL);
    registries.push(a);
    const t = tracker();
    const l1 = a.get(`k_${randomBytes(6).toString('hex')}`, { maxConcurrent: 1, minTimeMs: 0 });
    const l2 = a.get(`k_${randomBytes(6).toString('hex')}`, { maxConcurrent: 1, minTimeMs: 0 });
    await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? l1 : l2).schedule(t.job)));
    expect(t.peak()).toBe(2);
  });
});

describe('unreachable Redis', () => {
  it('fails with a message naming Redis and where, without its password', async () => {
    const r = new LimiterRegistry('redis://:hunter2-secret@127.0.0.1:1/0');
    registries.push(r);
    const err = await r
      .get('k', { maxConcurrent: 1, minTimeMs: 0 })
      .schedule(async () => 1)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REDIS_UNREACHABLE' });
    expect((err as Error).message).toMatch(/Cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0 \(REDIS_URL\)/);
    expect((err as Error).message).not.toContain('hunter2-secret');
  });
});
