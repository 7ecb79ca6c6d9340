/**
 * The HTTP client against the hostile server where a process adds nothing:
 * a body that trickles forever meets the per-attempt deadline (set tiny here,
 * so the test is quick), and shutdown still wins over it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient, type RequestBudget } from '../../src/api/http.ts';
import { PmsyncError, ShutdownError } from '../../src/errors.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { waitFor } from '../simulator/support.ts';
import { scaled } from '../support/time-scale.ts';
import { startHostileServer, type HostileServer } from './server.ts';

let server: HostileServer;

beforeAll(async () => {
  server = await startHostileServer();
});
afterAll(async () => {
  await server?.close();
});

function client(timeoutMs: number, maxAttempts: number): HttpClient {
  const budget: RequestBudget = { take: async () => undefined, exhausted: async () => new Error('exhausted') };
  return new HttpClient({
    sourceName: 'trickle',
    baseUrl: server.baseUrl,
    auth: { apply: () => undefined, hint: '' },
    budget,
    schedule: (fn) => fn(),
    redactor: new Redactor(),
    logger: createLogger(new Redactor(), { level: 'silent' }),
    timeoutMs,
    retry: { maxAttempts, baseDelayMs: 1, maxDelayMs: 1, maxElapsedMs: 60_000 },
  });
}

describe('requestTimeoutMs is a total deadline per attempt', () => {
  it('a body trickling a byte at a time is cut at the deadline, on every attempt', { timeout: scaled(15_000) }, async () => {
    server.set({ kind: 'trickle', intervalMs: 20 });
    const c = client(300, 2);
    try {
      const err = await c.get('/customers', { Page: 1, Rows: 100 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PmsyncError);
      expect((err as PmsyncError).code).toBe('RETRYABLE');
      expect((err as Error).message).toMatch(/source "trickle": GET \S+ did not complete within 300 ms \(requestTimeoutMs\)/);
      expect(server.count('/customers')).toBe(2);
    } finally {
      await c.close();
    }
  });

  it('a shutdown during a trickling body stops the request as a shutdown, not a timeout', { timeout: scaled(15_000) }, async () => {
    server.set({ kind: 'trickle', intervalMs: 20 });
    const c = client(60_000, 3);
    const stop = new AbortController();
    try {
      const pending = c.get('/customers', {}, { signal: stop.signal });
      // Shut down once the body has begun to trickle in.
      await waitFor(() => server.trickled >= 2);
      stop.abort();
      await expect(pending).rejects.toBeInstanceOf(ShutdownError);
      expect(server.count('/customers')).toBe(1);
    } finally {
      await c.close();
    }
  });
});
