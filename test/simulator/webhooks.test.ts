import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_NAMES, startSimulator, WEBHOOK_APPLICATION } from '../../simulator/index.ts';
import type { CoreRecord, Simulator, WebhookPayload, WebhookRegistration } from '../../simulator/index.ts';
import type { Receiver } from './support.ts';
import { authHeader, call, CORE, coreGet, coreUrl, startReceiver, waitFor } from './support.ts';
import { scaled } from '../support/time-scale.ts';

const OTHER = { apikey: 'other-key', username: 'carol', password: 'pw', variant: 'core' as const };
// The attempt timeout is a hang guard on the receivers here (scaled): an answer later than it would be retried.
const TIMING = { attemptTimeoutMs: scaled(300), retryIntervalMs: 40, maxAttempts: 4 };

describe('webhook registrations', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ tenants: [{ ...CORE, dailyQuota: 0 }, OTHER], webhookTiming: TIMING });
  });
  afterAll(() => sim.close());
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    call(coreUrl(sim.coreBaseUrl(), 'webhooks', CORE), { method: 'POST', headers: { ...authHeader(CORE), ...headers }, body });

  it('registers with a case-insensitive EventName and answers Id, id, WebhookUrl, EventType', async () => {
    const reply = await post({ EventName: 'patient.CREATED', WebhookUrl: 'https://hooks.example.com/pm' });
    expect(reply.status).toBe(200);
    const body = reply.json<WebhookRegistration & { id: number }>();
    expect(body).toEqual({ Id: body.Id, id: body.Id, WebhookUrl: 'https://hooks.example.com/pm', EventType: 'Patient.Created' });
    expect(Number.isInteger(body.Id) && body.Id > 0).toBe(true);
    const again = await post({ EventName: 'Patient.Created', WebhookUrl: 'https://hooks.example.com/pm' });
    expect(again.json<WebhookRegistration>().Id).toBe(body.Id);
  });

  it.each([
    ['no EventName', { WebhookUrl: 'https://h.example.com' }],
    ['Customer.Created', { EventName: 'Customer.Created', WebhookUrl: 'https://h.example.com' }],
    ['a non-string EventName', { EventName: 5, WebhookUrl: 'https://h.example.com' }],
    ['no WebhookUrl', { EventName: 'Order.Created' }],
    ['a relative WebhookUrl', { EventName: 'Order.Created', WebhookUrl: '/hooks' }],
    ['an ftp WebhookUrl', { EventName: 'Order.Created', WebhookUrl: 'ftp://h.example.com/x' }],
    ['a body that is not an object', ['Order.Created']],
    ['invalid JSON', '{"EventName":'],
  ])('answers 400 for %s', async (_name, body) => {
    const reply = await post(body);
    expect(reply.status).toBe(400);
  });

  it('wants a JSON content type', async () => {
    const reply = await post({ EventName: 'Order.Created', WebhookUrl: 'https://h.example.com' }, { 'content-type': 'text/plain' });
    expect(reply.status).toBe(415);
  });

  it('lists, filters, reads and deletes registrations of the tenant only', async () => {
    for (const event of EVENT_NAMES) await post({ EventName: event, WebhookUrl: 'https://hooks.example.com/all' });
    const all = (await coreGet(sim.coreBaseUrl(), 'webhooks', CORE)).json<WebhookRegistration[]>();
    expect(all.length).toBe(7);
    const orders = await coreGet(sim.coreBaseUrl(), 'webhooks', CORE, { EventType: 'order.updated' });
    expect(orders.json<WebhookRegistration[]>().map((r) => r.EventType)).toEqual(['Order.Updated']);
    const byUrl = await coreGet(sim.coreBaseUrl(), 'webhooks', CORE, { WebhookUrl: 'https://hooks.example.com/pm' });
    expect(byUrl.json<WebhookRegistration[]>()).toHaveLength(1);
    expect((await coreGet(sim.coreBaseUrl(), 'webhooks', CORE, { EventType: 'Order.Deleted' })).status).toBe(400);
    expect((await coreGet(sim.coreBaseUrl(), 'webhooks', CORE, { WebhookUrl: 'not a url' })).status).toBe(400);

    const one = all[2] as WebhookRegistration;
    expect((await coreGet(sim.coreBaseUrl(), `webhooks/${one.Id}`, CORE)).json()).toEqual(one);
    for (const bad of ['abc', '0', '-3', '1.5']) expect((await coreGet(sim.coreBaseUrl(), `webhooks/${bad}`, CORE)).status).toBe(400);
    expect((await coreGet(sim.coreBaseUrl(), 'webhooks/99999', CORE)).status).toBe(404);
    expect((await coreGet(sim.coreBaseUrl(), `webhooks/${one.Id}`, OTHER)).status).toBe(404);
    expect((await coreGet(sim.coreBaseUrl(), 'webhooks', OTHER)).json()).toEqual([]);

    const del = (id: string, tenant = CORE) =>
      call(coreUrl(sim.coreBaseUrl(), `webhooks/${id}`, tenant), { method: 'DELETE', headers: authHeader(tenant) });
    expect((await del(String(one.Id), OTHER)).status).toBe(404);
    const deleted = await del(String(one.Id));
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await del(String(one.Id))).status).toBe(404);
    expect((await del('zero')).status).toBe(400);
    expect((await coreGet(sim.coreBaseUrl(), `webhooks/${one.Id}`, CORE)).status).toBe(404);
  });
});

describe('webhook delivery', () => {
  let sim: Simulator;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    sim = await startSimulator({ tenants: [{ ...CORE, dailyQuota: 0, tenantId: '777' }], webhookTiming: TIMING });
  });
  afterAll(() => sim.close());
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });
  const register = async (event: string, url: string): Promise<number> => {
    const reply = await call(coreUrl(sim.coreBaseUrl(), 'webhooks', CORE), {
      method: 'POST',
      headers: authHeader(CORE),
      body: { EventName: event, WebhookUrl: url },
    });
    return reply.json<WebhookRegistration>().Id;
  };
  const unregister = (id: number) =>
    call(coreUrl(sim.coreBaseUrl(), `webhooks/${id}`, CORE), { method: 'DELETE', headers: authHeader(CORE) });

  it('retries a failing receiver with the same EventId until it answers 2xx', async () => {
    receiver = await startReceiver((n, _req, res) => res.writeHead(n <= 2 ? 500 : 204).end());
    const id = await register('Patient.Updated', receiver.url);
    const tenant = sim.tenant(CORE.apikey);
    const customer = tenant.list('customers')[0] as CoreRecord;
    tenant.update('customers', String(customer.CustomerId), { Email: 'new@example.com' });
    await sim.webhooksSettled();

    expect(receiver.bodies).toHaveLength(3);
    const payloads = receiver.bodies as WebhookPayload[];
    expect(new Set(payloads.map((p) => p.EventId)).size).toBe(1);
    expect(payloads[0]?.EventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(payloads[0]).toEqual({
      Application: WEBHOOK_APPLICATION,
      TenantId: 'sim01_777',
      EventId: payloads[0]?.EventId,
      EventType: 'Patient.Updated',
      EventTimestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/) as unknown,
      Url: `${sim.coreBaseUrl()}/customers/${String(customer.CustomerId)}`,
    });
    const attempts = sim.stats().webhookAttempts.filter((a) => a.webhookId === id);
    expect(attempts.map((a) => [a.attempt, a.status, a.ok])).toEqual([
      [1, 500, false],
      [2, 500, false],
      [3, 204, true],
    ]);
    expect(sim.stats().webhookDeliveries.find((d) => d.webhookId === id)?.state).toBe('delivered');

    // The Url carries no apikey; the receiver appends it to fetch the record.
    const url = payloads[0]?.Url ?? '';
    expect(url).not.toContain('apikey');
    const record = await call(`${url}?apikey=${CORE.apikey}`, { headers: authHeader(CORE) });
    expect(record.json<CoreRecord>().Email).toBe('new@example.com');
    await unregister(id);
  });

  it('fires Created and Updated events for customers, appointments and orders only', async () => {
    receiver = await startReceiver();
    const ids: number[] = [];
    for (const event of ['Appointment.Created', 'Order.Updated', 'Patient.Created']) ids.push(await register(event, receiver.url));
    const tenant = sim.tenant(CORE.apikey);
    const appointment = tenant.create('appointments');
    const order = tenant.list('orders')[1] as CoreRecord;
    tenant.update('orders', String(order.OrderId));
    tenant.update('customers', String(tenant.list('customers')[1]?.CustomerId));
    tenant.create('products');
    tenant.touch('memberships', 3);
    await sim.webhooksSettled();
    const payloads = receiver.bodies as WebhookPayload[];
    expect(payloads.map((p) => p.EventType).sort()).toEqual(['Appointment.Created', 'Order.Updated']);
    const urls = Object.fromEntries(payloads.map((p) => [p.EventType, p.Url]));
    expect(urls['Appointment.Created']).toBe(`${sim.coreBaseUrl()}/appointments/${String(appointment.AppointmentId)}/details`);
    expect(urls['Order.Updated']).toBe(`${sim.coreBaseUrl()}/orders/${String(order.OrderId)}`);
    for (const id of ids) await unregister(id);
  });

  it('counts a slow answer as a failed attempt and gives up after maxAttempts', async () => {
    receiver = await startReceiver((_n, _req, res) => {
      // Due after the simulator's own timer for the attempt, so always too late.
      setTimeout(() => res.writeHead(200).end(), 2 * TIMING.attemptTimeoutMs).unref();
    });
    const id = await register('Order.Created', receiver.url);
    sim.tenant(CORE.apikey).create('orders');
    await sim.webhooksSettled();
    const attempts = sim.stats().webhookAttempts.filter((a) => a.webhookId === id);
    expect(attempts).toHaveLength(TIMING.maxAttempts);
    expect(attempts.every((a) => !a.ok && a.error === 'attempt timed out')).toBe(true);
    expect(sim.stats().webhookDeliveries.find((d) => d.webhookId === id)?.state).toBe('failed');
    await unregister(id);
  });

  it('cancels pending retries on close', async () => {
    const slow = await startSimulator({
      tenants: [{ ...CORE, dailyQuota: 0 }],
      webhookTiming: { attemptTimeoutMs: 200, retryIntervalMs: 60_000, maxAttempts: 10 },
    });
    receiver = await startReceiver((_n, _req, res) => res.writeHead(503).end());
    await call(coreUrl(slow.coreBaseUrl(), 'webhooks', CORE), {
      method: 'POST',
      headers: authHeader(CORE),
      body: { EventName: 'Order.Created', WebhookUrl: receiver.url },
    });
    slow.tenant(CORE.apikey).create('orders');
    await waitFor(() => slow.stats().webhookAttempts.length === 1);
    const settled = slow.webhooksSettled();
    await slow.close();
    await settled;
    expect(slow.stats().webhookDeliveries.map((d) => d.state)).toEqual(['cancelled']);
    expect(receiver.bodies).toHaveLength(1);
  });
});
