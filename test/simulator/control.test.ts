import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { Simulator, SimulatorStats } from '../../simulator/index.ts';
import { call, CORE, coreGet, TestClock } from './support.ts';

describe('control API /__sim/', () => {
  const clock = new TestClock('2025-09-01T00:00:00Z');
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ now: clock.now, tenants: [{ ...CORE, sizes: { customers: 30 } }] });
  });
  afterAll(() => sim.close());
  const post = (action: string, body: unknown) => call(`${sim.url}/__sim/${action}`, { method: 'POST', body });

  it('creates and touches records of a tenant', async () => {
    clock.set('2025-09-01T08:00:00Z');
    const created = await post('create', { apikey: CORE.apikey, resource: 'customers', count: 4 });
    expect(created.status).toBe(200);
    expect(created.json<{ count: number; ids: string[] }>().count).toBe(4);
    expect(sim.tenant(CORE.apikey).count('customers')).toBe(34);

    clock.set('2025-09-01T09:00:00Z');
    const touched = await post('touch', { apikey: CORE.apikey, resource: 'customers', count: 5 });
    const ids = touched.json<{ ids: string[] }>().ids;
    expect(new Set(ids).size).toBe(5);
    for (const id of ids) expect(sim.tenant(CORE.apikey).get('customers', id)?.ModifiedOn).toBe('2025-09-01T09:00:00');
  });

  it('validates its input', async () => {
    expect((await post('touch', { apikey: 'nope', resource: 'customers', count: 1 })).status).toBe(404);
    expect((await post('touch', { apikey: CORE.apikey, resource: 'widgets', count: 1 })).status).toBe(400);
    expect((await post('create', { apikey: CORE.apikey, resource: 'orders', count: -1 })).status).toBe(400);
    expect((await post('faults', { errorRate: 5 })).status).toBe(400);
    expect((await call(`${sim.url}/__sim/unknown`)).status).toBe(404);
  });

  it('sets faults and reports stats', async () => {
    expect((await post('faults', { failNext: 1 })).status).toBe(200);
    expect((await coreGet(sim.coreBaseUrl(), 'status', CORE)).status).toBe(500);
    expect((await coreGet(sim.coreBaseUrl(), 'status', CORE)).status).toBe(200);
    const stats = (await call(`${sim.url}/__sim/stats?requests=1`)).json<SimulatorStats>();
    expect(stats.requests).toHaveLength(1);
    expect(stats.requests[0]).toMatchObject({ status: 200, apikey: CORE.apikey, path: '/api/v1/status' });
    expect(stats.byApikey[CORE.apikey]?.usedToday).toBe(1);
  });
});
