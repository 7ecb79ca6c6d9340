import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { CoreRecord, CoreTenantOptions, Simulator } from '../../simulator/index.ts';
import { CORE, coreGet, TestClock } from './support.ts';

const EMPTY: CoreTenantOptions = { apikey: 'empty-key', username: 'e', password: 'e', variant: 'core', sizes: { orders: 0 } };
const QUIET: CoreTenantOptions = {
  apikey: 'quiet-key',
  username: 'q',
  password: 'q',
  variant: 'core',
  dataHeaders: { customers: false },
};
const SILENT: CoreTenantOptions = { apikey: 'silent-key', username: 's', password: 's', variant: 'core', dataHeaders: false };

describe('Core lists', () => {
  const clock = new TestClock('2025-03-10T12:00:00Z');
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 3,
      now: clock.now,
      tenants: [{ ...CORE, sizes: { customers: 45, appointments: 400 }, dailyQuota: 0 }, EMPTY, QUIET, SILENT],
    });
  });
  afterAll(() => sim.close());
  const get = (path: string, query: Record<string, string | number> = {}, tenant = CORE) => coreGet(sim.coreBaseUrl(), path, tenant, query);

  it('serves a bare array with Data* headers, clamped at both ends', async () => {
    const first = await get('customers', { Rows: 20 });
    expect(first.status).toBe(200);
    expect(first.json<CoreRecord[]>()).toHaveLength(20);
    expect(first.headers).toMatchObject({
      datatotalrows: '45',
      datatotalpages: '3',
      datacurrentpage: '1',
      datanextpage: '2',
      datapriorpage: '1',
    });
    const last = await get('customers', { Rows: 20, Page: 3 });
    expect(last.json<CoreRecord[]>()).toHaveLength(5);
    expect(last.headers).toMatchObject({ datacurrentpage: '3', datanextpage: '3', datapriorpage: '2' });
  });

  it('returns [] past the last page', async () => {
    const past = await get('customers', { Rows: 20, Page: 9 });
    expect(past.status).toBe(200);
    expect(past.json()).toEqual([]);
    expect(past.headers).toMatchObject({ datatotalrows: '45', datatotalpages: '3', datanextpage: '3' });
  });

  it('reports 0 pages for an empty list', async () => {
    const empty = await get('orders', {}, EMPTY);
    expect(empty.json()).toEqual([]);
    expect(empty.headers).toMatchObject({
      datatotalrows: '0',
      datatotalpages: '0',
      datacurrentpage: '1',
      datanextpage: '1',
      datapriorpage: '1',
    });
  });

  it('never sends Data* headers for giftcertificates', async () => {
    const gifts = await get('giftcertificates', { Rows: 100 });
    expect(Array.isArray(gifts.json())).toBe(true);
    expect(gifts.json<CoreRecord[]>().length).toBeGreaterThan(0);
    expect(gifts.headers.datatotalrows).toBeUndefined();
    expect(gifts.headers.datanextpage).toBeUndefined();
  });

  it('lets Data* headers be turned off per tenant or per resource', async () => {
    expect((await get('customers', {}, QUIET)).headers.datatotalrows).toBeUndefined();
    expect((await get('orders', {}, QUIET)).headers.datatotalrows).toBeDefined();
    expect((await get('orders', {}, SILENT)).headers.datatotalrows).toBeUndefined();
  });

  it('defaults Rows to 20 or 30 by resource and clamps it to 100', async () => {
    expect((await get('customers')).json<CoreRecord[]>()).toHaveLength(20);
    expect((await get('orders')).json<CoreRecord[]>()).toHaveLength(30);
    const clamped = await get('orders', { Rows: 500 });
    expect(clamped.json<CoreRecord[]>()).toHaveLength(100);
    expect(clamped.headers.datatotalpages).toBe(String(Math.ceil(300 / 100)));
  });

  it.each([[{ Rows: 0 }], [{ Rows: 'ten' }], [{ Page: 0 }], [{ Page: '-1' }], [{ Page: '1.5' }]])(
    'answers 400 with a JSON message for %o',
    async (query) => {
      const reply = await get('customers', query);
      expect(reply.status).toBe(400);
      expect(reply.json()).toHaveProperty('Message');
    },
  );

  it('binds query names case-insensitively', async () => {
    expect((await get('orders', { rows: 7 })).json<CoreRecord[]>()).toHaveLength(7);
  });

  it('pages in stable creation order and covers every record once', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) {
      for (const record of (await get('customers', { Rows: 20, Page: page })).json<CoreRecord[]>()) seen.push(String(record.CustomerId));
    }
    expect(seen).toEqual(
      sim
        .tenant(CORE.apikey)
        .list('customers')
        .map((r) => r.CustomerId),
    );
    expect(new Set(seen).size).toBe(45);
  });

  it('filters on an inclusive ModifiedOn window', async () => {
    const tenant = sim.tenant(CORE.apikey);
    clock.set('2025-03-10T12:00:00Z');
    const before = tenant.create('customers', { FirstName: 'Before' });
    clock.set('2025-03-10T12:00:05Z');
    const inside = tenant.create('customers', { FirstName: 'Inside' });
    clock.set('2025-03-10T12:00:10Z');
    const edge = tenant.create('customers', { FirstName: 'Edge' });
    clock.set('2025-03-10T12:00:11Z');
    tenant.create('customers', { FirstName: 'After' });

    const window = await get('customers', { ModifiedOnStart: '2025-03-10T12:00:01', ModifiedOnEnd: '2025-03-10T12:00:10' });
    expect(window.json<CoreRecord[]>().map((r) => r.FirstName)).toEqual(['Inside', 'Edge']);
    expect(window.headers.datatotalrows).toBe('2');
    expect(inside.ModifiedOn).toBe('2025-03-10T12:00:05');

    const from = await get('customers', { ModifiedOnStart: before.ModifiedOn as string, Rows: 100 });
    expect(from.json<CoreRecord[]>().map((r) => r.FirstName)).toEqual(['Before', 'Inside', 'Edge', 'After']);

    clock.set('2025-03-10T13:00:00Z');
    const updated = tenant.update('customers', String(before.CustomerId), { LastName: 'Changed' });
    expect(updated.ModifiedOn).toBe('2025-03-10T13:00:00');
    expect(updated.CreatedOn).toBe('2025-03-10T12:00:00');
    const after = await get('customers', { ModifiedOnStart: '2025-03-10T12:30:00' });
    expect(after.json<CoreRecord[]>().map((r) => r.CustomerId)).toEqual([before.CustomerId]);
    expect(edge.ModifiedOn).toBe('2025-03-10T12:00:10');
  });

  it('treats a date-only ModifiedOnEnd as the whole day and rejects unparseable values', async () => {
    const day = await get('customers', { ModifiedOnStart: '2025-03-10', ModifiedOnEnd: '2025-03-10', Rows: 100 });
    expect(day.json<CoreRecord[]>().length).toBeGreaterThanOrEqual(4);
    for (const value of ['yesterday', '2025-02-30', '2025-03-10T25:00:00']) {
      expect((await get('customers', { ModifiedOnStart: value })).status).toBe(400);
      expect((await get('customers', { ModifiedOnEnd: value })).status).toBe(400);
    }
  });

  it('requires StartDate and EndDate on appointments and matches the start date', async () => {
    expect((await get('appointments')).status).toBe(400);
    expect((await get('appointments', { StartDate: '2025-01-01' })).status).toBe(400);
    expect((await get('appointments', { StartDate: '2025-01-01', EndDate: 'soon' })).status).toBe(400);
    const all = sim.tenant(CORE.apikey).list('appointments');
    const expected = all.filter(
      (a) => String(a.StartDateTime).slice(0, 10) >= '2025-01-01' && String(a.StartDateTime).slice(0, 10) <= '2025-01-31',
    );
    const reply = await get('appointments', { StartDate: '2025-01-01', EndDate: '2025-01-31', Rows: 100 });
    expect(reply.status).toBe(200);
    expect(reply.json<CoreRecord[]>().map((a) => a.AppointmentId)).toEqual(expected.map((a) => a.AppointmentId));
    expect(expected.length).toBeGreaterThan(0);
  });

  it('filters customers by CompanyId, IsActive and exact case-insensitive names', async () => {
    const all = sim.tenant(CORE.apikey).list('customers');
    const sample = all[3] as CoreRecord;
    const byCompany = await get('customers', { CompanyId: String(sample.CompanyId), Rows: 100 });
    expect(byCompany.json<CoreRecord[]>().map((r) => r.CustomerId)).toEqual(
      all.filter((r) => r.CompanyId === sample.CompanyId).map((r) => r.CustomerId),
    );
    const inactive = await get('customers', { IsActive: 'false', Rows: 100 });
    expect(inactive.json<CoreRecord[]>().every((r) => r.IsActive === false)).toBe(true);
    expect(inactive.json<CoreRecord[]>()).toHaveLength(all.filter((r) => r.IsActive === false).length);
    expect((await get('customers', { IsActive: 'maybe' })).status).toBe(400);
    const named = await get('customers', { LastName: String(sample.LastName).toUpperCase(), Email: String(sample.Email), Rows: 100 });
    expect(named.json<CoreRecord[]>().map((r) => r.CustomerId)).toContain(sample.CustomerId);
    expect(named.json<CoreRecord[]>().every((r) => r.Email === sample.Email)).toBe(true);
    expect((await get('customers', { CompanyId: 'not-a-company' })).json()).toEqual([]);
  });

  it('serves single records and 404 once removed', async () => {
    const tenant = sim.tenant(CORE.apikey);
    const customer = tenant.list('customers')[0] as CoreRecord;
    const id = String(customer.CustomerId);
    expect((await get(`customers/${id}`)).json()).toEqual(customer);
    const appointment = tenant.list('appointments')[0] as CoreRecord;
    expect((await get(`appointments/${String(appointment.AppointmentId)}/details`)).json()).toEqual(appointment);
    const order = tenant.list('orders')[0] as CoreRecord;
    expect((await get(`orders/${String(order.OrderId)}`)).json()).toEqual(order);
    expect((await get(`customers/${String(order.OrderId)}`)).status).toBe(404);
    expect((await get('customers/AAAAAAAAAAA')).status).toBe(404);

    const total = tenant.count('customers');
    expect(tenant.remove('customers', id)).toBe(true);
    expect(tenant.remove('customers', id)).toBe(false);
    expect((await get(`customers/${id}`)).status).toBe(404);
    const listed = await get('customers', { Rows: 100 });
    expect(listed.headers.datatotalrows).toBe(String(total - 1));
    expect(listed.json<CoreRecord[]>().map((r) => r.CustomerId)).not.toContain(id);
    expect(tenant.get('customers', id)).toBeUndefined();
  });

  it('keeps cached listings exact through creates, updates and removals', async () => {
    const tenant = sim.tenant(CORE.apikey);
    const query = { IsActive: 'true', ModifiedOnStart: '2023-01-01', Rows: 100 };
    await get('customers', query);
    clock.set('2025-03-11T09:00:00Z');
    const records = tenant.list('customers');
    tenant.update('customers', String(records[1]?.CustomerId), { IsActive: false });
    tenant.update('customers', String(records[2]?.CustomerId), { IsActive: true });
    tenant.remove('customers', String(records[4]?.CustomerId));
    tenant.create('customers', { IsActive: true });
    tenant.touch('customers', 5);
    const expected = tenant
      .list('customers')
      .filter((r) => r.IsActive === true && String(r.ModifiedOn) >= '2023-01-01')
      .map((r) => r.CustomerId);
    const reply = await get('customers', query);
    expect(reply.json<CoreRecord[]>().map((r) => r.CustomerId)).toEqual(expected);
  });

  it('exposes the full Core catalog with the contract’s id fields', async () => {
    const ids: Record<string, string> = {
      companies: 'CompanyId',
      customers: 'CustomerId',
      orders: 'OrderId',
      memberships: 'MembershipId',
      membershipprograms: 'MembershipProgramId',
      giftcertificates: 'GiftCertificateId',
      products: 'ProductId',
      services: 'ServiceId',
      employees: 'EmployeeId',
    };
    for (const [resource, idField] of Object.entries(ids)) {
      const reply = await get(resource);
      expect(reply.status, resource).toBe(200);
      const first = reply.json<CoreRecord[]>()[0] as CoreRecord;
      expect(Object.keys(first)[0]).toBe(idField);
      expect(String(first[idField])).toMatch(/^[A-Za-z0-9_-]{11}$/);
      expect(first.CreatedOn).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
      expect(first.ModifiedOn).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
    }
    const programs = new Set(
      sim
        .tenant(CORE.apikey)
        .list('membershipprograms')
        .map((p) => p.ProgramName),
    );
    for (const membership of sim.tenant(CORE.apikey).list('memberships')) {
      expect(programs.has(membership.MembershipProgram)).toBe(true);
      expect(membership).not.toHaveProperty('ProgramName');
    }
  });

  it('renders timestamps in the tenant time zone', async () => {
    const zoned = await startSimulator({
      seed: 3,
      now: () => new Date('2025-07-01T15:30:00Z'),
      tenants: [{ ...CORE, timeZone: 'America/New_York', sizes: { customers: 1 } }],
    });
    try {
      const created = zoned.tenant(CORE.apikey).create('customers');
      expect(created.ModifiedOn).toBe('2025-07-01T11:30:00');
      const hit = await coreGet(zoned.coreBaseUrl(), 'customers', CORE, { ModifiedOnStart: '2025-07-01T11:30:00' });
      expect(hit.json<CoreRecord[]>().map((r) => r.CustomerId)).toEqual([created.CustomerId]);
      const utc = await coreGet(zoned.coreBaseUrl(), 'customers', CORE, { ModifiedOnStart: '2025-07-01T15:30:01Z' });
      expect(utc.json()).toEqual([]);
    } finally {
      await zoned.close();
    }
  });
});
