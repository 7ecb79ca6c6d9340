/**
 * Replicas share one limiter per gateway key through Redis (Bottleneck's
 * ioredis datastore), tested against the real Redis the test run provides
 * (test/support/redis.ts). Only on a machine where no Redis can be found or
 * started, outside CI, are they skipped, with the reason; in CI that fails
 * the run instead. Every key carries this
 * file's own random prefix, so runs sharing one Redis never meet, and the
 * limiter state they leave is deleted at the end.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { LimiterRegistry } from '../../src/api/limiter.ts';

const REDIS_URL = inject('redisUrl');
const PREFIX = `test-${randomBytes(6).toString('hex')}`;
let keys = 0;
/** A gateway key no other test (here or in another run) uses. */
const uniqueKey = () => `${PREFIX}-${++keys}`;

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
  if (!REDIS_URL) return;
  const redis = new Redis(REDIS_URL);
  try {
    const stale = await redis.keys(`b_pmsync-${PREFIX}-*`);
    if (stale.length > 0) await redis.del(...stale);
  } finally {
    redis.disconnect();
  }
});

describe.skipIf(!REDIS_URL)(`shared limiter through Redis${REDIS_URL ? '' : ` (skipped: ${inject('redisProvider')})`}`, () => {
  it('two replicas together never run more than maxConcurrent requests for one key', async () => {
    const key = uniqueKey();
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
    const key = uniqueKey();
    const a = new LimiterRegistry();
    const b = new LimiterRegistry();
    registries.push(a, b);
    const t = tracker();
    const la = a.get(key, { maxConcurrent: 1, minTimeMs: 0 });
    const lb = b.get(key, { maxConcurrent: 1, minTimeMs: 0 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? la : lb).schedule(t.job)));
    expect(t.peak()).toBe(2);
  });

  it('different keys do not share a limiter', async () => {
    const a = new LimiterRegistry(REDIS_URL);
    registries.push(a);
    const t = tracker();
    const l1 = a.get(uniqueKey(), { maxConcurrent: 1, minTimeMs: 0 });
    const l2 = a.get(uniqueKey(), { maxConcurrent: 1, minTimeMs: 0 });
    await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? l1 : l2).schedule(t.job)));
    expect(t.peak()).toBe(2);
  });
});

describe('unreachable Redis', () => {
  it('fails with a message naming Redis and where, without its password', async () => {
    const r = new LimiterRegistry('redis://:hunter2-secret@127.0.0.1:1/0');
    registries.push(r);
    const err = await r
      .get(uniqueKey(), { maxConcurrent: 1, minTimeMs: 0 })
      .schedule(async () => 1)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REDIS_UNREACHABLE' });
    expect((err as Error).message).toMatch(/Cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0 \(REDIS_URL\)/);
    expect((err as Error).message).not.toContain('hunter2-secret');
  });
});
