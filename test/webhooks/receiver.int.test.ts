/**
 * The receiver over real HTTP with a real database and queue: what it refuses
 * (and then stores nothing), what it accepts, and that a hostile Url never
 * leads to a request.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { refreshSuperviseSeconds, startWebhooks, type Webhooks } from '../../src/webhooks/index.ts';
import { openJobQueue, type JobQueue } from '../../src/queue.ts';
import { REFRESH_QUEUE } from '../../src/webhooks/queue.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreSourceEntry, logSink, openTestApp, post, startListener, testConfig, waitFor, type TestServer } from './support.ts';

const TENANT = { apikey: 'wh-recv-key-Q1', username: 'wh.user', password: 'wh-pass-R7', variant: 'core' as const, tenantId: '77' };
/** An account of its own: one configuration refuses two sources reading the same account. */
const ROTATING = { apikey: 'wh-recv-key-Q3', username: 'wh.rot', password: 'wh-pass-T9', variant: 'core' as const };
const SUBSET = { apikey: 'wh-recv-sub-Q2', username: 'wh.sub', password: 'wh-pass-S8', variant: 'subset' as const, subsetName: 'Sub' };

let db: TestDatabase;
let sim: Simulator;
let app: App;
let jobs: JobQueue | undefined;
let webhooks: Webhooks;
let server: Server;
let receiver: string;
let foreign: TestServer;
const logs = logSink();
const token = newToken();
const namedToken = newToken();
let seq = 0;
// The app's clock runs with real time; a test moves it forward instead of waiting.
let skewMs = 0;
const now = () => new Date(Date.now() + skewMs);

function delivery(url: string, extra: Record<string, unknown> = {}) {
  seq += 1;
  return {
    Application: 'pm',
    TenantId: 'sim01_77',
    EventId: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
    EventType: 'Patient.Updated',
    EventTimestamp: new Date().toISOString(),
    Url: url,
    ...extra,
  };
}

async function stored(eventId: string) {
  const r = await db.pool.query('SELECT outcome, reason, duplicates FROM pmsync.webhook_events WHERE event_id = $1', [eventId]);
  return r.rows[0] as { outcome: string; reason: string | null; duplicates: number } | undefined;
}

async function jobsFor(part: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND singleton_key LIKE $2', [
    REFRESH_QUEUE,
    `%${part}%`,
  ]);
  return r.rows[0]!.n;
}

async function issue(source: string, t: string): Promise<void> {
  const now = new Date();
  await addProvisionalSecret(db.pool, source, hashToken(t), now);
  await activateSecret(db.pool, source, hashToken(t), now, new Date(now.getTime() + 3600_000));
}

beforeAll(async () => {
  db = await createTestDatabase();
  sim = await startSimulator({
    seed: 11,
    tenants: [{ ...TENANT, sizes: { customers: 30 } }, SUBSET, { ...ROTATING, sizes: { customers: 5 } }],
  });
  foreign = await startListener();
  const simPort = new URL(sim.url).port;
  const config = testConfig(db.url, [
    coreSourceEntry('clinic', sim.coreBaseUrl(), TENANT, { webhook: { tenantId: 'sim01_77' } }),
    coreSourceEntry('named', `http://localhost:${simPort}/api/v1`, TENANT),
    coreSourceEntry('rotating', sim.coreBaseUrl(), ROTATING),
    { ...coreSourceEntry('sub', sim.subsetBaseUrl('Sub'), SUBSET), kind: 'subset' },
  ]);
  app = await openTestApp(config, { logs: logs.stream, now });
  jobs = await openJobQueue(app, { mode: 'work', superviseSeconds: refreshSuperviseSeconds(config.webhooks), connections: 4 });
  webhooks = await startWebhooks(app, jobs);
  server = createServer(webhooks.receiver.handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiver = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await issue('clinic', token);
  await issue('named', namedToken);
});

afterAll(async () => {
  await new Promise<void>((r) => {
    server?.close(() => r());
    server?.closeAllConnections();
  });
  await webhooks?.stop();
  await jobs?.stop();
  await app?.close();
  await foreign?.close();
  await sim?.close();
  await db?.drop();
});

describe('webhook receiver', () => {
  it('stores an authentic delivery with its refresh before answering, and acknowledges a duplicate without processing it', async () => {
    const customer = sim.tenant(TENANT.apikey).list('customers')[0]!;
    const body = delivery(`${sim.coreBaseUrl()}/customers/${customer.CustomerId as string}`);
    const first = await post(`${receiver}/webhooks/clinic/${token}`, body);
    expect(first).toEqual({ status: 200, body: { status: 'queued' } });
    // Stored before the reply: visible the moment the answer arrives.
    expect(await stored(body.EventId)).toMatchObject({ outcome: 'queued', duplicates: 0 });
    expect(await post(`${receiver}/webhooks/clinic/${token}`, body)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect(await stored(body.EventId)).toMatchObject({ duplicates: 1 });
    expect(await jobsFor(customer.CustomerId as string)).toBe(1);
    const row = await waitFor(
      async () =>
        (await db.pool.query('SELECT first_name FROM customers WHERE source = $1 AND id = $2', ['clinic', customer.CustomerId])).rows[0],
      'the refreshed row',
    );
    expect(row.first_name).toBe(customer.FirstName);
  });

  it('refuses a wrong, missing or foreign token, unknown sources and sources without webhooks, storing nothing', async () => {
    const body = delivery(`${sim.coreBaseUrl()}/customers/abc`);
    for (const path of [
      `/webhooks/clinic/${newToken()}`,
      `/webhooks/clinic/${token.slice(0, -1)}`,
      '/webhooks/clinic/',
      '/webhooks/clinic',
      `/webhooks/named/${token}`,
      `/webhooks/nosuch/${token}`,
      `/webhooks/sub/${token}`,
    ]) {
      expect((await post(`${receiver}${path}`, body)).status, path).toBe(401);
    }
    expect(await stored(body.EventId)).toBeUndefined();
    expect(await jobsFor('abc')).toBe(0);
  });

  it('refuses malformed requests before storing anything', async () => {
    const url = `${receiver}/webhooks/clinic/${token}`;
    const body = delivery(`${sim.coreBaseUrl()}/customers/abc`);
    expect((await post(url, body, {}, 'GET')).status).toBe(405);
    expect((await post(`${url}/extra`, body)).status).toBe(404);
    expect((await post(url, body, { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post(url, { ...body, Padding: 'x'.repeat(70 * 1024) })).status).toBe(413);
    expect((await post(url, '{"Application":', { 'content-type': 'application/json' })).status).toBe(400);
    const { Url: _u, ...noUrl } = body;
    expect((await post(url, noUrl)).status).toBe(400);
    expect((await post(url, { ...body, EventType: 'Customer.Created' })).status).toBe(400);
    // Date.parse reads "1" as the year 2001; a date-time is what the spec sends.
    for (const EventTimestamp of ['1', '2026', '2026-03-02', 'yesterday'])
      expect((await post(url, { ...body, EventTimestamp })).status).toBe(400);
    expect((await post(url, { ...body, TenantId: 'sim01_78' })).status).toBe(403);
    expect(await stored(body.EventId)).toBeUndefined();
    expect(await jobsFor('abc')).toBe(0);
  });

  it('accepts a token for the grace period after it was replaced, and not after it expired', async () => {
    const [before, after] = [newToken(), newToken()];
    await issue('rotating', before);
    await issue('rotating', after);
    const id = sim.tenant(ROTATING.apikey).list('customers')[1]!.CustomerId as string;
    const send = (t: string) => post(`${receiver}/webhooks/rotating/${t}`, delivery(`${sim.coreBaseUrl()}/customers/${id}`));
    expect((await send(after)).status).toBe(200);
    expect((await send(before)).status).toBe(200);
    await db.pool.query(`UPDATE pmsync.webhook_secrets SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [
      hashToken(before),
    ]);
    skewMs += 5_100; // the receiver re-reads secrets at least every 5 s by its clock
    expect((await send(before)).status).toBe(401);
    expect((await send(after)).status).toBe(200);
  });

  it('rejects hostile Urls: acknowledged and recorded, nothing queued, no request to the foreign host or the API', async () => {
    const sim0 = sim.stats().requests.length;
    const base = sim.coreBaseUrl();
    const simHost = new URL(sim.url).host;
    const hostile = [
      `${foreign.url}/api/v1/customers/evil1`,
      `http://127.0.0.1:${foreign.port}/api/v1/customers/evil2`,
      `${base.replace('/api/v1', '/api/v2')}/customers/evil3`,
      `${base}/companies/evil4`,
      `http://user:pw@${simHost}/api/v1/customers/evil5`,
      `http://${simHost}@127.0.0.1:${foreign.port}/api/v1/customers/evil6`,
      `${base}/customers/evil7?redirect=${encodeURIComponent(foreign.url)}`,
      `${base}/customers/evil8#frag`,
      `${base}/customers/evil9%2F..%2F..%2Fwebhooks`,
      `${base}/customers/x/../../../evil10`,
      `https://${simHost}/api/v1/customers/evil11`,
      `${base}/orders/evil12`, // an order Url on a Patient event
    ];
    for (const url of hostile) {
      const body = delivery(url);
      expect(await post(`${receiver}/webhooks/clinic/${token}`, body), url).toEqual({ status: 200, body: { status: 'rejected' } });
      expect((await stored(body.EventId))?.outcome, url).toBe('rejected');
    }
    // The source "named" has a host name for a base: the same API reached by IP literal is refused.
    const ip = delivery(`${sim.url}/api/v1/customers/evil13`);
    expect(await post(`${receiver}/webhooks/named/${namedToken}`, ip)).toEqual({ status: 200, body: { status: 'rejected' } });
    expect((await stored(ip.EventId))?.reason).toMatch(/IP address/);

    expect(await jobsFor('evil')).toBe(0);
    // An authentic delivery after them: once its refresh has landed, the worker has run past every hostile one.
    const after = sim.tenant(TENANT.apikey).list('customers')[2]!;
    const sentinel = delivery(`${base}/customers/${after.CustomerId as string}`);
    expect(await post(`${receiver}/webhooks/clinic/${token}`, sentinel)).toEqual({ status: 200, body: { status: 'queued' } });
    await waitFor(
      async () => (await db.pool.query('SELECT 1 FROM customers WHERE source = $1 AND id = $2', ['clinic', after.CustomerId])).rows[0],
      'the refresh queued after the hostile deliveries',
    );
    expect(foreign.requests).toEqual([]);
    expect(
      sim
        .stats()
        .requests.slice(sim0)
        .filter((r) => r.path.includes('evil')),
    ).toEqual([]);
  });

  it('never writes the secret token to the logs or the database', async () => {
    expect(logs.text()).not.toContain(token);
    expect(logs.text()).not.toContain(namedToken);
    const dump = await db.pool.query(`SELECT string_agg(t::text, '') AS s FROM (SELECT * FROM pmsync.webhook_secrets) t`);
    expect(dump.rows[0].s).not.toContain(token);
    const events = await db.pool.query(`SELECT string_agg(t::text, '') AS s FROM (SELECT * FROM pmsync.webhook_events) t`);
    expect(events.rows[0].s).not.toContain(token);
    expect(webhooks.receiver.stats()).toMatchObject({ unauthorized: 8, duplicate: 1 });
  });
});

describe('notifications for streams scheduled by budget', () => {
  it('mark the stream for a check at the receiver clock instead of queueing a refresh; pinned or full-refresh streams still fetch the record', async () => {
    const { createWebhookReceiver } = await import('../../src/webhooks/receiver.ts');
    const config = testConfig(
      db.url,
      [coreSourceEntry('clinic', sim.coreBaseUrl(), TENANT, { webhook: { tenantId: 'sim01_77' }, fullRefresh: ['orders'] })],
      { refresh: 'auto' },
    );
    const at = new Date('2026-11-23T15:04:05.000Z');
    const pinned = { ...config, schedules: { ...config.schedules!, overrides: [{ resource: 'appointments', cron: '*/5 * * * *' }] } };
    const notifying = createWebhookReceiver({
      config: () => pinned,
      pool: app.pool,
      logger: app.logger,
      queue: webhooks.queue,
      now: () => at,
    });
    const s = createServer(notifying.handler);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/webhooks/clinic/${token}`;
    try {
      const customer = sim.tenant(TENANT.apikey).list('customers')[23];
      const d = delivery(`${sim.coreBaseUrl()}/customers/${customer!.CustomerId}`);
      expect((await post(url, d)).body).toEqual({ status: 'notified' });
      const row = await db.pool.query('SELECT outcome, resource, received_at FROM pmsync.webhook_events WHERE event_id = $1', [d.EventId]);
      expect(row.rows[0]).toEqual({ outcome: 'notified', resource: 'customers', received_at: at });
      expect(await jobsFor(String(customer!.CustomerId))).toBe(0);

      const pinned = delivery(`${sim.coreBaseUrl()}/appointments/appt-pinned-1/details`, { EventType: 'Appointment.Updated' });
      expect((await post(url, pinned)).body).toEqual({ status: 'queued' });
      const full = delivery(`${sim.coreBaseUrl()}/orders/order-full-1`, { EventType: 'Order.Updated' });
      expect((await post(url, full)).body).toEqual({ status: 'queued' });
    } finally {
      await new Promise<void>((r) => s.close(() => r()));
    }
  });
});
