import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { startSimulator } from '../../simulator/index.ts';
import type { CoreRecord, Simulator } from '../../simulator/index.ts';
import { authHeader, CORE, coreUrl, TestClock } from './support.ts';

const CUSTOMERS = 200_000;

describe('a 200k-customer tenant', () => {
  const clock = new TestClock('2025-08-20T10:00:00Z');
  let sim: Simulator;
  let agent: Agent;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 12, now: clock.now, tenants: [{ ...CORE, dailyQuota: 0, sizes: { customers: CUSTOMERS } }] });
    agent = new Agent({ connections: 4 });
  });
  afterAll(async () => {
    await agent.close();
    await sim.close();
  });

  async function pageAll(query: Record<string, string>): Promise<{ ids: string[]; totals: Set<string> }> {
    const ids: string[] = [];
    const totals = new Set<string>();
    for (let page = 1; ; page++) {
      const res = await request(coreUrl(sim.coreBaseUrl(), 'customers', CORE, { ...query, Rows: 100, Page: page }), {
        headers: authHeader(CORE),
        dispatcher: agent,
      });
      const records = (await res.body.json()) as CoreRecord[];
      totals.add(String(res.headers.datatotalrows));
      for (const record of records) ids.push(String(record.CustomerId));
      if (page >= Number(res.headers.datatotalpages)) return { ids, totals };
    }
  }

  it('pages through every customer exactly once', async () => {
    const { ids, totals } = await pageAll({});
    expect(totals).toEqual(new Set([String(CUSTOMERS)]));
    expect(ids).toHaveLength(CUSTOMERS);
    expect(new Set(ids).size).toBe(CUSTOMERS);
    expect(ids[123_456]).toBe(sim.tenant(CORE.apikey).list('customers', { offset: 123_456, limit: 1 })[0]?.CustomerId);
  });

  it('pages a ModifiedOn window that matches the records’ own stamps', async () => {
    const start = '2025-01-01T00:00:00';
    const expected = sim
      .tenant(CORE.apikey)
      .list('customers')
      .filter((r) => String(r.ModifiedOn) >= start)
      .map((r) => String(r.CustomerId));
    expect(expected.length).toBeGreaterThan(1000);
    const { ids, totals } = await pageAll({ ModifiedOnStart: start });
    expect(totals).toEqual(new Set([String(expected.length)]));
    expect(ids).toEqual(expected);
  });
});
