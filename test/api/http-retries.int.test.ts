/**
 * The client against the simulator's injected faults, with the real quota
 * ledger in PostgreSQL: what is retried, how long it waits, when it gives up,
 * and that every attempt is counted before it is sent.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpClient, restAuth } from '../../src/api/http.ts';
import type { RetryPolicy } from '../../src/config/schema.ts';
import { LimiterRegistry } from '../../src/api/limiter.ts';
import { PmsyncError, QuotaExhaustedError } from '../../src/errors.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { keyFingerprint, QuotaLedger } from '../../src/state/quota.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { TestClock } from '../support/harness.ts';
import { waitFor } from '../simulator/support.ts';

const TENANT = { apikey: 'retry-key-Q1', username: 'retry.user', password: 'retry-pass-Z9', variant: 'core' as const };
const clock = new TestClock('2026-03-02T10:00:00Z');

let sim: Simulator;
let db: TestDatabase;
let limiters: LimiterRegistry;
let ledger: QuotaLedger;
const clients: HttpClient[] = [];

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, now: clock.now, tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 50 } }] });
  db = await createTestDatabase();
  limiters = new LimiterRegistry();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await limiters.close();
  await sim?.close();
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('DELETE FROM pmsync.quota_usage');
  ledger = new QuotaLedger(
    db.pool,
    {
      keyId: keyFingerprint(TENANT.apikey),
      dailyLimit: 1000,
      reservePercent: 10,
      budget: 150,
      timeZone: 'UTC',
      resetHour: 0,
      label: 'source "clinic"',
    },
    clock.now,
  );
});
afterEach(() => sim.setFaults({}));

const POLICY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 400, maxElapsedMs: 60_000 };

/**
 * Waits are recorded, not slept, unless a test needs real time (`sleep: 'real'`): the retries' time bound is then
 * measured on a clock that moves by the waits alone, so what is retried does not depend on how busy the machine is.
 */
function client(options: { retry?: RetryPolicy; timeoutMs?: number; password?: string; sleep?: 'real' } = {}) {
  const sleeps: number[] = [];
  let waited = 0;
  const redactor = new Redactor();
  redactor.add(TENANT.apikey, TENANT.password);
  const c = new HttpClient({
    sourceName: 'clinic',
    baseUrl: sim.coreBaseUrl(),
    auth: restAuth({ ...TENANT, password: options.password ?? TENANT.password, credentialsIn: 'header', name: 'clinic' }),
    budget: ledger,
    schedule: (fn) => limiters.get('k', { maxConcurrent: 2, minTimeMs: 0 }).schedule(fn),
    redactor,
    logger: createLogger(redactor, { level: 'silent' }),
    timeoutMs: options.timeoutMs ?? 5_000,
    retry: options.retry ?? POLICY,
    random: () => 0.999,
    sleep:
      options.sleep === 'real'
        ? undefined
        : async (ms) => {
            sleeps.push(ms);
            waited += ms;
          },
    now: options.sleep === 'real' ? undefined : () => waited,
  });
  clients.push(c);
  return { c, sleeps };
}

async function used(): Promise<number> {
  return (await ledger.snapshot()).used;
}

function sent(from: number) {
  return sim.stats().requests.slice(from);
}

describe('retries against injected faults', () => {
  it('retries 5xx with full-jitter exponential backoff and counts every attempt', async () => {
    sim.setFaults({ failNext: 3 });
    const from = sim.stats().requests.length;
    const { c, sleeps } = client();
    const res = await c.get('/customers', { Rows: 10 });
    expect(res.status).toBe(200);
    expect(sent(from).map((r) => r.status)).toEqual([500, 500, 500, 200]);
    // random() = 0.999: each wait is just under its cap, which doubles from baseDelayMs up to maxDelayMs.
    expect(sleeps).toEqual([99, 199, 399]);
    expect(await used()).toBe(4);
  });

  it('gives up after maxAttempts and reports the last failure', async () => {
    sim.setFaults({ failNext: 10 });
    const from = sim.stats().requests.length;
    const { c, sleeps } = client();
    const err = await c.get('/customers').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PmsyncError);
    expect((err as PmsyncError).code).toBe('RETRYABLE');
    expect((err as Error).message).toMatch(/source "clinic": GET .*\/customers.* failed with 500/);
    expect(sent(from)).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
    expect(await used()).toBe(4);
  });

  it('retries connection resets', async () => {
    sim.setFaults({ resetRate: 1 });
    const from = sim.stats().requests.length;
    const { c } = client();
    await expect(c.get('/customers')).rejects.toMatchObject({ code: 'RETRYABLE', retryable: true });
    expect(sent(from).map((r) => r.status)).toEqual([0, 0, 0, 0]);
    expect(await used()).toBe(4);
  });

  it('retries timeouts', async () => {
    sim.setFaults({ timeoutRate: 1, hangMs: 3_000 });
    const { c } = client({ timeoutMs: 150, retry: { ...POLICY, maxAttempts: 3 } });
    const err = await c.get('/customers').catch((e: unknown) => e);
    expect((err as PmsyncError).code).toBe('RETRYABLE');
    expect((err as Error).message).toMatch(/timeout/i);
    expect(await used()).toBe(3);
  });

  it('waits at least Retry-After before retrying a 503', async () => {
    sim.setFaults({ errorRate: 1, retryAfterSeconds: 3 });
    const from = sim.stats().requests.length;
    const { c, sleeps } = client({ retry: { ...POLICY, maxAttempts: 8 } });
    await expect(c.get('/customers')).rejects.toMatchObject({ code: 'RETRYABLE' });
    const statuses = sent(from).map((r) => r.status);
    expect(statuses).toHaveLength(8);
    expect(statuses).toContain(503);
    statuses.slice(0, -1).forEach((status, i) => {
      if (status === 503) expect(sleeps[i]).toBeGreaterThanOrEqual(3_000);
      else expect(sleeps[i]).toBeLessThan(400);
    });
  });

  it('does not retry early when Retry-After reaches past the time bound: it gives up instead', async () => {
    sim.setFaults({ errorRate: 1, retryAfterSeconds: 120 });
    const { c, sleeps } = client({ retry: { ...POLICY, maxAttempts: 50, maxElapsedMs: 10_000 } });
    await expect(c.get('/customers')).rejects.toMatchObject({ code: 'RETRYABLE' });
    const statuses = sim
      .stats()
      .requests.slice(-sleeps.length - 1)
      .map((r) => r.status);
    expect(statuses.at(-1)).toBe(503);
    expect(sleeps.every((ms) => ms < 10_000)).toBe(true);
  });

  it('stops retrying once maxElapsedMs would be passed, however many attempts are left', async () => {
    sim.setFaults({ failNext: 100 });
    const from = sim.stats().requests.length;
    const { c, sleeps } = client({ retry: { maxAttempts: 50, baseDelayMs: 200, maxDelayMs: 200, maxElapsedMs: 300 } });
    await expect(c.get('/customers')).rejects.toMatchObject({ code: 'RETRYABLE' });
    // The first wait is 199 ms; a second one would end at 398 ms, past 300.
    expect(sleeps).toEqual([199]);
    expect(sent(from)).toHaveLength(2);
  });

  it('does not retry other 4xx answers', async () => {
    const from = sim.stats().requests.length;
    const { c, sleeps } = client();
    await expect(c.get('/customers', { ModifiedOnStart: 'not-a-date' })).rejects.toMatchObject({ code: 'VALIDATION_FAILED', status: 400 });
    await expect(c.get('/orders/no-such-order')).rejects.toMatchObject({ code: 'NOT_FOUND', status: 404 });
    expect(sent(from)).toHaveLength(2);
    expect(sleeps).toEqual([]);
    expect(await used()).toBe(2);
  });

  it('does not retry a 401, and names the source and the credentials to check without printing them', async () => {
    const from = sim.stats().requests.length;
    const { c } = client({ password: 'not-the-password' });
    const err = (await c.get('/customers').catch((e: unknown) => e)) as PmsyncError;
    expect(err.code).toBe('AUTH_FAILED');
    expect(err.message).toMatch(
      /source "clinic".*401.*Check the gateway key and the API user of source "clinic" \(its apikey, username and password\); the user must be active/,
    );
    expect(err.message).not.toContain(TENANT.apikey);
    expect(sent(from)).toHaveLength(1);
  });

  it('never retries a 429: the key is marked exhausted until the reset and nothing more is sent', async () => {
    sim.setFaults({ quotaExhaustAfter: 0 });
    const from = sim.stats().requests.length;
    const { c, sleeps } = client();
    const err = (await c.get('/customers').catch((e: unknown) => e)) as QuotaExhaustedError;
    expect(err).toBeInstanceOf(QuotaExhaustedError);
    expect(err.resumeAt.toISOString()).toBe('2026-03-03T00:00:00.000Z');
    expect(err.message).toMatch(/429.*resume after 2026-03-03T00:00:00.000Z/);
    expect(sleeps).toEqual([]);
    expect(sent(from)).toHaveLength(1);

    sim.setFaults({});
    const again = (await c.get('/customers').catch((e: unknown) => e)) as QuotaExhaustedError;
    expect(again.code).toBe('QUOTA_EXHAUSTED');
    expect(again.message).toMatch(/answered 429 .* earlier on quota day 2026-03-02.*until 2026-03-03T00:00:00.000Z/);
    expect(sent(from)).toHaveLength(1);
    expect((await ledger.snapshot()).exhaustedUntil?.toISOString()).toBe('2026-03-03T00:00:00.000Z');
  });

  it('ends the backoff wait and the request at once on shutdown, with a SHUTDOWN error', async () => {
    sim.setFaults({ failNext: 5 });
    const abort = new AbortController();
    const { c } = client({ retry: { ...POLICY, baseDelayMs: 60_000, maxDelayMs: 60_000, maxElapsedMs: 600_000 }, sleep: 'real' });
    const from = sim.stats().requests.length;
    const pending = c.get('/customers', {}, { signal: abort.signal });
    // Shut down once the first attempt has failed: the client is then backing off for a minute.
    await waitFor(() => sent(from).length === 1);
    abort.abort();
    await expect(pending).rejects.toMatchObject({ code: 'SHUTDOWN' });
  });
});
