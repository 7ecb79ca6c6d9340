import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { Simulator } from '../../simulator/index.ts';
import { call, CORE, coreGet, coreUrl, SUBSET, TestClock } from './support.ts';

describe('daily quota', () => {
  const clock = new TestClock('2025-05-01T10:00:00Z');
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      now: clock.now,
      tenants: [
        { ...CORE, dailyQuota: 3, quotaResetHourUtc: 6 },
        { ...SUBSET, dailyQuota: 0 },
      ],
    });
  });
  afterAll(() => sim.close());

  it('answers 429 once the quota day is used up, without counting refusals, until the reset hour', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await coreGet(sim.coreBaseUrl(), i === 1 ? 'nowhere' : 'status', CORE)).status);
    expect(statuses).toEqual([200, 404, 200]);
    expect((await coreGet(sim.coreBaseUrl(), 'status', CORE)).status).toBe(429);
    expect((await coreGet(sim.coreBaseUrl(), 'customers', CORE)).status).toBe(429);
    // Unauthenticated requests are refused before the quota and do not count.
    expect((await call(coreUrl(sim.coreBaseUrl(), 'status', CORE))).status).toBe(401);

    let usage = sim.stats().byApikey[CORE.apikey];
    expect(usage).toMatchObject({ requests: 5, rejected: 2, usedToday: 3, dailyQuota: 3, quotaDay: '2025-05-01' });

    clock.set('2025-05-02T05:59:59Z');
    expect((await coreGet(sim.coreBaseUrl(), 'status', CORE)).status).toBe(429);
    clock.set('2025-05-02T06:00:00Z');
    expect((await coreGet(sim.coreBaseUrl(), 'status', CORE)).status).toBe(200);
    usage = sim.stats().byApikey[CORE.apikey];
    expect(usage?.byQuotaDay).toEqual({ '2025-05-01': 3, '2025-05-02': 1 });
    expect(usage?.quotaDay).toBe('2025-05-02');
  });

  it('treats a quota of 0 as unlimited', async () => {
    for (let i = 0; i < 20; i++) expect((await coreGet(sim.subsetBaseUrl('Acme'), 'companies', SUBSET)).status).toBe(200);
    expect(sim.stats().byApikey[SUBSET.apikey]).toMatchObject({ usedToday: 20, dailyQuota: null });
  });

  it('logs every request with its apikey and status', () => {
    const log = sim.stats().requests.filter((r) => r.apikey === CORE.apikey);
    expect(log.map((r) => r.status)).toEqual([200, 404, 200, 429, 429, 401, 429, 200]);
    expect(log[0]).toMatchObject({ api: 'core', method: 'GET', path: '/api/v1/status' });
    expect(log[0]?.at).toBeInstanceOf(Date);
  });
});
