import { describe, expect, it } from 'vitest';
import { CORE_RESOURCES, startSimulator } from '../../simulator/index.ts';
import type { CoreRecord, Simulator, SimulatorOptions } from '../../simulator/index.ts';
import { CORE, coreGet } from './support.ts';

const NOW = () => new Date('2025-02-14T09:30:00Z');

async function withSim<T>(options: SimulatorOptions, use: (sim: Simulator) => Promise<T>): Promise<T> {
  const sim = await startSimulator({
    now: NOW,
    tenants: [{ ...CORE, dailyQuota: 0 }],
    practices: [{ token: 't', practiceId: 1 }],
    ...options,
  });
  try {
    return await use(sim);
  } finally {
    await sim.close();
  }
}

const snapshot = (sim: Simulator) => ({
  core: Object.fromEntries(CORE_RESOURCES.map((r) => [r, sim.tenant(CORE.apikey).list(r)])),
  pro: (['patients', 'appointments', 'eventTypes', 'providers', 'waitlist', 'waitlistSlots'] as const).map((r) => sim.practice(1).list(r)),
});

describe('seeded data', () => {
  it('is identical for the same seed and clock, and differs for another seed', async () => {
    const a = await withSim({ seed: 99 }, async (sim) => snapshot(sim));
    const b = await withSim({ seed: 99 }, async (sim) => snapshot(sim));
    const c = await withSim({ seed: 100 }, async (sim) => snapshot(sim));
    expect(b).toEqual(a);
    expect(c.core.customers).not.toEqual(a.core.customers);
    expect(c.pro[0]).not.toEqual(a.pro[0]);
  });

  it('serves the same bytes over HTTP for the same seed', async () => {
    const body = (seed: number) =>
      withSim({ seed }, async (sim) => (await coreGet(sim.coreBaseUrl(), 'customers', CORE, { Rows: 100, Page: 2 })).text);
    expect(await body(5)).toBe(await body(5));
  });

  it('makes ids opaque, stable and unique, with references that resolve', async () => {
    await withSim({ seed: 4 }, async (sim) => {
      const tenant = sim.tenant(CORE.apikey);
      const customers = tenant.list('customers');
      const ids = customers.map((c) => String(c.CustomerId));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.every((id) => /^[A-Za-z0-9_-]{11}$/.test(id))).toBe(true);
      expect(tenant.get('customers', ids[9] as string)).toEqual(customers[9]);
      const companies = new Set(tenant.list('companies').map((c) => c.CompanyId));
      expect(customers.every((c) => companies.has(c.CompanyId))).toBe(true);
      const appointment = tenant.list('appointments')[0] as CoreRecord;
      expect(tenant.get('customers', String(appointment.CustomerId))).toBeDefined();
      expect(tenant.get('employees', String(appointment.EmployeeId))).toBeDefined();
    });
  });

  it('keeps the seeded record fields realistic', async () => {
    await withSim({ seed: 8 }, async (sim) => {
      const customer = sim.tenant(CORE.apikey).list('customers')[0] as CoreRecord;
      expect(customer).toMatchObject({
        FirstName: expect.stringMatching(/^[A-Z]/) as unknown,
        Email: expect.stringMatching(/^[a-z0-9.-]+@example\.(com|org|net)$/) as unknown,
        MobilePhone: expect.stringMatching(/^\(\d{3}\) 555-\d{4}$/) as unknown,
        IsActive: expect.any(Boolean) as unknown,
      });
      expect((customer.CreatedOn as string) <= (customer.ModifiedOn as string)).toBe(true);
      expect((customer.ModifiedOn as string) < '2025-02-14').toBe(true);
    });
  });
});
