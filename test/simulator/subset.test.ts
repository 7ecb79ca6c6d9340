import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { CoreRecord, Simulator } from '../../simulator/index.ts';
import { authHeader, call, coreGet, coreUrl, SUBSET } from './support.ts';

describe('Subset API', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, tenants: [{ ...SUBSET, sizes: { orders: 12 } }] });
  });
  afterAll(() => sim.close());
  const base = (): string => sim.subsetBaseUrl('Acme');

  it('lives under /CustomAPI/<name>/api/v1 and serves its five resources', async () => {
    expect(base()).toBe(`${sim.url}/CustomAPI/Acme/api/v1`);
    for (const resource of ['companies', 'employees', 'services', 'orders']) {
      const reply = await coreGet(base(), resource, SUBSET);
      expect(reply.status, resource).toBe(200);
      expect(reply.headers.datatotalrows).toBeDefined();
    }
    expect((await coreGet(base(), 'orders', SUBSET)).json<CoreRecord[]>()).toHaveLength(12);
    expect((await coreGet(base(), 'appointments', SUBSET, { StartDate: '2000-01-01', EndDate: '2100-01-01' })).status).toBe(200);
  });

  it.each(['customers', 'memberships', 'membershipprograms', 'giftcertificates', 'products', 'status', 'webhooks'])(
    'has no %s (404)',
    async (path) => {
      expect((await coreGet(base(), path, SUBSET)).status).toBe(404);
    },
  );

  it('has no webhook registration', async () => {
    const reply = await call(coreUrl(base(), 'webhooks', SUBSET), {
      method: 'POST',
      headers: authHeader(SUBSET),
      body: { EventName: 'Order.Created', WebhookUrl: 'http://127.0.0.1:1/x' },
    });
    expect(reply.status).toBe(404);
  });

  it('serves single orders and appointment details', async () => {
    const order = sim.tenant(SUBSET.apikey).list('orders')[0] as CoreRecord;
    expect((await coreGet(base(), `orders/${String(order.OrderId)}`, SUBSET)).json()).toEqual(order);
    const appointment = sim.tenant(SUBSET.apikey).list('appointments')[0] as CoreRecord;
    expect((await coreGet(base(), `appointments/${String(appointment.AppointmentId)}/details`, SUBSET)).status).toBe(200);
  });

  it('refuses handle access to resources the Subset does not expose', () => {
    expect(() => sim.tenant(SUBSET.apikey).list('customers')).toThrow(/not served/);
  });
});
