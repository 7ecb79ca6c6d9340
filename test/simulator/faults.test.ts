import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { CoreRecord, Simulator } from '../../simulator/index.ts';
import { authHeader, call, CORE, coreGet, coreUrl, HeldDelays, TestClock, waitFor } from './support.ts';

describe('faults', () => {
  const clock = new TestClock('2025-04-01T12:00:00Z');
  const delays = new HeldDelays();
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 21,
      now: clock.now,
      delay: delays.delay,
      tenants: [{ ...CORE, dailyQuota: 0, sizes: { customers: 120 } }],
    });
  });
  afterEach(() => {
    sim.setFaults({});
    delays.releaseAll();
  });
  afterAll(() => sim.close());
  const status = () => coreGet(sim.coreBaseUrl(), 'status', CORE);

  it('failNext answers the next N requests with 500', async () => {
    sim.setFaults({ failNext: 2 });
    const replies = [await status(), await status(), await status()];
    expect(replies.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(replies[0]?.text).toBe('');
  });

  it('errorRate answers 500, 502 or 503 with an empty or non-JSON body, and Retry-After on 503', async () => {
    sim.setFaults({ errorRate: 1, retryAfterSeconds: 7 });
    const seen = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const reply = await status();
      seen.add(reply.status);
      expect([500, 502, 503]).toContain(reply.status);
      expect(() => JSON.parse(reply.text)).toThrow();
      if (reply.status === 503) expect(reply.headers['retry-after']).toBe('7');
    }
    expect(seen.size).toBe(3);
    expect(sim.stats().requests.at(-1)?.fault).toBe('error');
  });

  it('is deterministic: the same fault settings fail the same requests', async () => {
    const run = async (): Promise<number[]> => {
      sim.setFaults({ errorRate: 0.3 });
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await status()).status);
      return statuses;
    };
    const first = await run();
    expect(first.filter((s) => s !== 200).length).toBeGreaterThan(3);
    expect(await run()).toEqual(first);
  });

  it('resetRate destroys the socket without a response', async () => {
    sim.setFaults({ resetRate: 1 });
    await expect(status()).rejects.toThrow();
    sim.setFaults({});
    expect((await status()).status).toBe(200);
    expect(sim.stats().requests.some((r) => r.fault === 'reset' && r.status === 0)).toBe(true);
  });

  it('timeoutRate hangs the request for hangMs', async () => {
    sim.setFaults({ timeoutRate: 1, hangMs: 400 });
    // A client that gives up while the request hangs gets no answer.
    const before = sim.stats().requests.length;
    const giveUp = new AbortController();
    const abandoned = request(coreUrl(sim.coreBaseUrl(), 'status', CORE), { headers: authHeader(CORE), signal: giveUp.signal });
    await waitFor(() => delays.pending.length === 1);
    giveUp.abort();
    await expect(abandoned).rejects.toThrow();
    delays.releaseAll();
    await waitFor(() => sim.stats().requests.length === before + 1);
    expect(sim.stats().requests.at(-1)?.fault).toBe('timeout');
    // A patient one is answered once hangMs has passed, and not before.
    const served = before + 1;
    const answer = status();
    await waitFor(() => delays.pending.length === 1);
    expect(delays.pending.map((d) => d.ms)).toEqual([400]);
    expect(sim.stats().requests.length).toBe(served);
    delays.releaseAll();
    expect((await answer).status).toBe(200);
  });

  it('slowMs adds latency to every request', async () => {
    sim.setFaults({ slowMs: 150 });
    const answers = [status(), status()];
    await waitFor(() => delays.pending.length === 2);
    expect(delays.pending.map((d) => d.ms)).toEqual([150, 150]);
    delays.releaseAll();
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200]);
  });

  it('quotaExhaustAfter forces 429 after N more requests', async () => {
    sim.setFaults({ quotaExhaustAfter: 2 });
    expect([(await status()).status, (await status()).status, (await status()).status, (await status()).status]).toEqual([
      200, 200, 429, 429,
    ]);
    sim.setFaults({});
    expect((await status()).status).toBe(200);
  });

  it('mutateBetweenPages moves served records out of a fixed ModifiedOn window, so a naive pager skips rows', async () => {
    const window = { ModifiedOnStart: '2000-01-01T00:00:00', ModifiedOnEnd: '2025-04-01T00:00:00', Rows: 20 };
    const before = (await coreGet(sim.coreBaseUrl(), 'customers', CORE, { ...window, Rows: 100, Page: 1 })).headers.datatotalrows;
    expect(before).toBe('120');
    sim.setFaults({ mutateBetweenPages: { resource: 'customers', count: 3 } });
    const seen: string[] = [];
    for (let page = 1; page <= 6; page++) {
      const reply = await coreGet(sim.coreBaseUrl(), 'customers', CORE, { ...window, Page: page });
      seen.push(...reply.json<CoreRecord[]>().map((r) => String(r.CustomerId)));
    }
    sim.setFaults({});
    const changed = sim
      .tenant(CORE.apikey)
      .list('customers')
      .filter((r) => r.ModifiedOn === '2025-04-01T12:00:00');
    expect(changed.length).toBeGreaterThan(0);
    // Every changed record was served before it changed, and the rows that slid back a page were never served.
    expect(changed.every((r) => seen.includes(String(r.CustomerId)))).toBe(true);
    expect(seen.length).toBeLessThan(120);
    const after = await coreGet(sim.coreBaseUrl(), 'customers', CORE, { ...window, Rows: 100 });
    expect(after.headers.datatotalrows).toBe(String(120 - changed.length));
  });

  it('rejects invalid fault settings', () => {
    expect(() => sim.setFaults({ errorRate: 2 })).toThrow();
    expect(() => sim.setFaults({ errorRate: 0.6, resetRate: 0.6 })).toThrow();
    expect(() => sim.setFaults({ slowMs: -1 })).toThrow();
  });

  it('applies to Pro too, and leaves the control API alone', async () => {
    sim.setFaults({ failNext: 1 });
    expect((await call(`${sim.url}/__sim/health`)).status).toBe(200);
    expect((await call(`${sim.url}/practices/4242/event-types`, { headers: { authorization: 'x' } })).status).toBe(500);
  });
});

describe('faults for one apikey', () => {
  const clock = new TestClock('2025-04-01T12:00:00Z');
  const delays = new HeldDelays();
  const OTHER = { ...CORE, apikey: 'other-key', username: 'carol', password: 'pa55word' };
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 21, now: clock.now, delay: delays.delay, tenants: [CORE, OTHER] });
  });
  afterEach(() => {
    sim.setFaults({});
    sim.setFaults({ apikey: CORE.apikey });
    sim.setFaults({ apikey: OTHER.apikey });
    delays.releaseAll();
  });
  afterAll(() => sim.close());
  const statusOf = async (tenant: typeof CORE) => (await coreGet(sim.coreBaseUrl(), 'status', tenant)).status;
  const logged = (apikey: string) => sim.stats().requests.filter((r) => r.apikey === apikey);

  it('fail only the requests carrying that key, which the request log names', async () => {
    sim.setFaults({ apikey: CORE.apikey, errorRate: 1 });
    const before = logged(CORE.apikey).length;
    for (let i = 0; i < 5; i++) {
      expect([500, 502, 503]).toContain(await statusOf(CORE));
      expect(await statusOf(OTHER)).toBe(200);
    }
    const mine = logged(CORE.apikey).slice(before);
    expect(mine).toHaveLength(5);
    expect(mine.every((r) => r.fault === 'error')).toBe(true);
    expect(logged(OTHER.apikey).every((r) => r.fault === undefined)).toBe(true);
  });

  it('replace the global faults for that key, and `{ apikey }` alone clears them', async () => {
    sim.setFaults({ failNext: 10 });
    sim.setFaults({ apikey: CORE.apikey, slowMs: 50 });
    const slow = coreGet(sim.coreBaseUrl(), 'status', CORE);
    await waitFor(() => delays.pending.length === 1);
    expect(delays.pending.map((d) => d.ms)).toEqual([50]);
    delays.releaseAll();
    expect((await slow).status).toBe(200);
    expect(await statusOf(OTHER)).toBe(500);
    sim.setFaults({ apikey: CORE.apikey });
    expect(await statusOf(CORE)).toBe(500);
  });

  it('are set through the control API too, and checked like the global ones', async () => {
    const reply = await call(`${sim.url}/__sim/faults`, { method: 'POST', body: { apikey: OTHER.apikey, failNext: 1 } });
    expect(reply.status).toBe(200);
    expect([await statusOf(OTHER), await statusOf(OTHER), await statusOf(CORE)]).toEqual([500, 200, 200]);
    expect((await call(`${sim.url}/__sim/faults`, { method: 'POST', body: { apikey: OTHER.apikey, errorRate: 3 } })).status).toBe(400);
    expect((await call(`${sim.url}/__sim/faults`, { method: 'POST', body: { apikey: 7, failNext: 1 } })).status).toBe(400);
  });
});
