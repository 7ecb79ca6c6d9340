import { describe, expect, it } from 'vitest';
import { numeric } from '../../src/sync/columns.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { defineRestStream, type RecordUrlShape, type StreamWebhook } from '../../src/sync/streams/rest.ts';
import { WEBHOOKS, webhookCatalog } from '../../src/webhooks/catalog.ts';
import { canonicalEventName, deliverySchema, EVENT_NAMES } from '../../src/webhooks/events.ts';
import { matchRecordUrl } from '../../src/webhooks/record-url.ts';

/*
 * The tables as they were written by hand before the streams declared them:
 * if the derivation drifts, the receiver accepts or registers something else.
 */
const HAND_WRITTEN_EVENT_NAMES = [
  'Patient.Created',
  'Patient.Updated',
  'Appointment.Created',
  'Appointment.Updated',
  'Order.Created',
  'Order.Updated',
];
/** Which resource each event family's Url must point to. */
const HAND_WRITTEN_EVENT_RESOURCE: Record<string, string> = { patient: 'customers', appointment: 'appointments', order: 'orders' };
const HAND_WRITTEN_SHAPES = [
  { resource: 'customers', pattern: /^customers\/([^/]+)$/ },
  { resource: 'appointments', pattern: /^appointments\/([^/]+)\/details$/ },
  { resource: 'orders', pattern: /^orders\/([^/]+)$/ },
];
const HAND_WRITTEN_RECORD_PATHS: Record<string, (id: string) => string> = {
  customers: (id) => `/customers/${encodeURIComponent(id)}`,
  appointments: (id) => `/appointments/${encodeURIComponent(id)}/details`,
  orders: (id) => `/orders/${encodeURIComponent(id)}`,
};
const HAND_WRITTEN_REJECTION = 'the Url is not one of customers/{id}, appointments/{id}/details or orders/{id}';

const BASE = 'https://api.example.com/api/v1';

function stream(resource: string, extra: { webhook: StreamWebhook } | { recordPath: (id: string) => string } | object = {}) {
  return defineRestStream({
    resource,
    path: `/${resource}`,
    idField: 'Id',
    mode: 'incremental',
    variants: ['core'],
    ...extra,
    table: { name: resource, columns: { total: numeric('Total') } },
  });
}

describe('the webhook catalog of the stream registry', () => {
  it('has the event names, in the order they were registered', () => {
    expect(WEBHOOKS.events).toEqual(HAND_WRITTEN_EVENT_NAMES);
    expect(EVENT_NAMES).toEqual(HAND_WRITTEN_EVENT_NAMES);
  });

  it('points each event to the resource its family did', () => {
    expect(Object.fromEntries(WEBHOOKS.resourceOf)).toEqual(
      Object.fromEntries(HAND_WRITTEN_EVENT_NAMES.map((e) => [e, HAND_WRITTEN_EVENT_RESOURCE[e.split('.')[0]!.toLowerCase()]])),
    );
  });

  it('has the record URL shapes, in the order they were tried', () => {
    expect(WEBHOOKS.recordUrls.map(({ resource, pattern }) => ({ resource, pattern }))).toEqual(HAND_WRITTEN_SHAPES);
    expect(matchRecordUrl(`${BASE}/companies/a`, BASE)).toEqual({ ok: false, reason: HAND_WRITTEN_REJECTION });
  });

  it('builds the single-record paths the streams declared', () => {
    const withRecord = REST_STREAMS.filter((s) => s.recordPath).map((s) => s.resource);
    expect(withRecord).toEqual(Object.keys(HAND_WRITTEN_RECORD_PATHS));
    for (const s of REST_STREAMS.filter((x) => x.recordPath)) {
      for (const id of ['Z9', 'a/b', 'x y', 'q$&1'])
        expect(s.recordPath!(id), `${s.resource} ${id}`).toBe(HAND_WRITTEN_RECORD_PATHS[s.resource]!(id));
    }
  });

  it('accepts the names in any letter case and nothing else', () => {
    expect(canonicalEventName(' patient.CREATED ')).toBe('Patient.Created');
    expect(canonicalEventName('Customer.Created')).toBeUndefined();
    const delivery = { Application: 'a', TenantId: 't', EventId: 'e', EventTimestamp: '2026-03-02T09:59:00Z', Url: `${BASE}/orders/1` };
    expect(deliverySchema.safeParse({ ...delivery, EventType: 'order.updated' })).toMatchObject({
      success: true,
      data: { EventType: 'Order.Updated' },
    });
    const refused = deliverySchema.safeParse({ ...delivery, EventType: 'Order.Deleted' });
    expect(refused.error?.issues[0]?.message).toBe(`must be one of ${HAND_WRITTEN_EVENT_NAMES.join(', ')}`);
  });
});

describe('webhookCatalog', () => {
  it('takes nothing from a stream without webhooks, even one with a single-record endpoint', () => {
    const plain = stream('invoices');
    const withRecord = stream('payments', { recordPath: (id: string) => `/payments/${id}` });
    expect(plain.recordPath).toBeUndefined();
    expect(webhookCatalog([plain, withRecord])).toEqual({ events: [], resourceOf: new Map(), recordUrls: [] });
    expect(webhookCatalog(REST_STREAMS.filter((s) => !s.webhook))).toEqual({ events: [], resourceOf: new Map(), recordUrls: [] });
  });

  it('derives a new resource from its stream alone', () => {
    const invoices = stream('invoices', { webhook: { events: ['Invoice.Created'], recordUrl: 'invoices/{id}/view' } });
    expect(invoices.recordPath!('a/b')).toBe('/invoices/a%2Fb/view');
    const catalog = webhookCatalog([...REST_STREAMS, invoices]);
    expect(catalog.events).toEqual([...HAND_WRITTEN_EVENT_NAMES, 'Invoice.Created']);
    expect(catalog.resourceOf.get('Invoice.Created')).toBe('invoices');
    expect(catalog.recordUrls.at(-1)).toEqual({ resource: 'invoices', shape: 'invoices/{id}/view', pattern: /^invoices\/([^/]+)\/view$/ });
  });

  it('refuses an event two streams claim and a shape without exactly one {id}', () => {
    const twin = stream('patients', { webhook: { events: ['PATIENT.created'], recordUrl: 'patients/{id}' } });
    expect(() => webhookCatalog([...REST_STREAMS, twin])).toThrow(/PATIENT\.created is already customers's/);
    const twice = stream('invoices', { webhook: { events: ['Invoice.Created'], recordUrl: 'invoices/{id}/{id}' } });
    expect(() => webhookCatalog([twice])).toThrow(/exactly once/);
    const none = stream('invoices', { webhook: { events: ['Invoice.Created'], recordUrl: 'invoices' as RecordUrlShape } });
    expect(() => webhookCatalog([none])).toThrow(/exactly once/);
  });
});
