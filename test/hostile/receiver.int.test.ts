/**
 * The webhook receiver facing bad bytes and a lost database. A delivery whose
 * text can never be stored is refused as invalid (400: the sender must not
 * retry it); a database that cannot be reached is answered 503 with
 * Retry-After (the sender retries), also once the cached secret tokens expire.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { createWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/receiver.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

let db: TestDatabase;
let proxy: TcpProxy;
let pool: Pool;
let receiver: WebhookReceiver;
let server: Server;
let endpoint: string;
let clock = Date.parse('2026-03-02T10:00:00.000Z');
const token = newToken();
let seq = 0;

function delivery(extra: Record<string, unknown> = {}) {
  seq += 1;
  return {
    Application: 'pm',
    TenantId: 'sim01_77',
    EventId: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
    EventType: 'Patient.Updated',
    EventTimestamp: '2026-03-02T09:59:00Z',
    Url: 'http://127.0.0.1:9/api/v1/customers/abc',
    ...extra,
  };
}

async function deliver(body: unknown): Promise<{ status: number; retryAfter: string | null; body: string }> {
  const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
}

async function stored(eventId: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pmsync.webhook_events WHERE event_id = $1', [eventId]);
  return r.rows[0]!.n;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const admin = new URL(db.url);
  proxy = await startTcpProxy(admin.hostname, Number(admin.port || 5432));
  pool = createPool(proxy.url(db.url));
  const config = loadConfig(STREAM_REGISTRY, {
    configFile: writeConfig({
      sources: [{ name: 'clinic', kind: 'core', baseUrl: 'http://127.0.0.1:9/api/v1', apikey: 'k-recv', username: 'u', password: 'p' }],
    }),
    env: { DATABASE_URL: proxy.url(db.url) },
  });
  receiver = createWebhookReceiver({
    config: () => config,
    pool,
    logger: createLogger(new Redactor(), { level: 'silent' }),
    queue: { enqueue: async () => true },
    now: () => new Date(clock),
  });
  server = createServer(receiver.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/clinic/${token}`;
  const now = new Date(clock);
  await addProvisionalSecret(db.pool, 'clinic', hashToken(token), now);
  await activateSecret(db.pool, 'clinic', hashToken(token), now, now);
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await pool?.end().catch(() => undefined);
  await db?.drop();
});

describe('text that can never be stored', () => {
  it('a delivery is stored when its text is clean', async () => {
    const body = delivery();
    const res = await deliver(body);
    expect(res.status).toBe(200);
    expect(await stored(body.EventId)).toBe(1);
  });

  it.each([
    ['Application', 'pm\u0000'],
    ['TenantId', 'sim01\u0000_77'],
    ['TenantId', 'sim01_\ud800'],
    ['Url', 'http://127.0.0.1:9/api/v1/customers/a\u0000b'],
  ])('%s holding %j is refused with 400 (never 503) and nothing is stored', async (field, value) => {
    const body = delivery({ [field]: value });
    const res = await deliver(body);
    expect(res.status).toBe(400);
    expect(res.body).toContain(`invalid field(s): ${field}`);
    expect(await stored(body.EventId)).toBe(0);
  });
});

describe('a database that cannot be reached', () => {
  it('answers 503 with Retry-After, before and after the cached secret tokens expire', async () => {
    await proxy.cut();
    const cached = await deliver(delivery());
    expect(cached.status).toBe(503);
    expect(cached.retryAfter).toBe('30');
    clock += 60_000;
    const expired = await deliver(delivery());
    expect(expired.status).toBe(503);
    expect(expired.retryAfter).toBe('30');
    expect(receiver.stats().failed).toBe(2);
  });
});
