/**
 * Refreshes end to end in one process: simulator (behind a gate that can
 * hold or answer requests), receiver over HTTP, pg-boss queue and worker on a
 * real database. Fetches are counted where they arrive.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.ts';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { keyFingerprint } from '../../src/state/quota.ts';
import { PAUSES } from '../../src/scheduler/source-failures.ts';
import { recordSourceFailure, recordSourceSuccess } from '../../src/state/source-health.ts';
import {
  listDeadLetters,
  openRefreshQueue,
  refreshQueueCounts,
  refreshSuperviseSeconds,
  REFRESH_QUEUE,
  type RefreshQueue,
} from '../../src/webhooks/queue.ts';
import { openJobQueue, type JobQueue } from '../../src/queue.ts';
import { createWebhookReceiver } from '../../src/webhooks/receiver.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { startRefreshWorker, type RefreshWorker } from '../../src/webhooks/worker.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import {
  coreSourceEntry,
  openTestApp,
  post,
  startGate,
  startListener,
  testConfig,
  waitFor,
  type Gate,
  type TestServer,
} from './support.ts';

const TENANT = { apikey: 'wh-ref-key-A1', username: 'wh.ref', password: 'wh-ref-pass-B2', variant: 'core' as const };
const QUOTA_TENANT = { apikey: 'wh-ref-key-C3', username: 'wh.quota', password: 'wh-ref-pass-D4', variant: 'core' as const };

let db: TestDatabase;
let sim: Simulator;
let gate: Gate;
let foreign: TestServer;
let app: App;
let jobs: JobQueue;
let queue: RefreshQueue;
let server: Server;
let receiver: string;
let worker: RefreshWorker | null = null;
const tokens: Record<string, string> = {};
let seq = 0;

/** "gated" reaches the simulator through the gate; "direct" is what the simulator's own deliveries name. */
const base = (source: 'gated' | 'direct' | 'quota') => (source === 'direct' ? sim.coreBaseUrl() : `${gate.url}/api/v1`);

function delivery(url: string, eventType = 'Patient.Updated') {
  seq += 1;
  return {
    Application: 'pm',
    TenantId: 'sim01_1',
    EventId: `evt-${seq}-${Math.random().toString(36).slice(2)}`,
    EventType: eventType,
    EventTimestamp: new Date().toISOString(),
    Url: url,
  };
}

async function deliver(source: 'gated' | 'direct' | 'quota', url: string, eventType?: string): Promise<string> {
  const res = await post(`${receiver}/webhooks/${source}/${tokens[source]}`, delivery(url, eventType));
  expect(res.status).toBe(200);
  return (res.body as { status: string }).status;
}

const customers = (t = TENANT) =>
  sim
    .tenant(t.apikey)
    .list('customers')
    .map((c) => c.CustomerId as string);
const gateFetches = (id: string) =>
  gate.requests.filter((r) => r.method === 'GET' && r.url.split('?')[0]!.endsWith(`/customers/${id}`)).length;

async function row(source: string, id: string) {
  return (await db.pool.query('SELECT first_name, not_seen_since, fetched_at FROM customers WHERE source = $1 AND id = $2', [source, id]))
    .rows[0] as { first_name: string; not_seen_since: Date | null; fetched_at: Date } | undefined;
}

async function startWorker(): Promise<void> {
  worker = await startRefreshWorker({
    config: () => app.config,
    ctx: app.ctx,
    pool: app.pool,
    logger: app.logger,
    redactor: app.redactor,
    queue,
  });
}

async function idle(): Promise<void> {
  await waitFor(
    async () => {
      const c = await refreshQueueCounts(app.pool);
      return c.ready + c.active + c.retrying === 0;
    },
    'the refresh queue to drain',
    60_000,
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  sim = await startSimulator({
    seed: 5,
    tenants: [
      { ...TENANT, sizes: { customers: 1_000 } },
      { ...QUOTA_TENANT, sizes: { customers: 10 } },
    ],
    webhookTiming: { attemptTimeoutMs: 2_000, retryIntervalMs: 200, maxAttempts: 10 },
  });
  gate = await startGate(sim.url);
  foreign = await startListener();
  const config = testConfig(
    db.url,
    [
      // Record refreshes spend the source's budget; these sources' bursts need most of the quota.
      coreSourceEntry('gated', `${gate.url}/api/v1`, TENANT, { budget: '90%' }),
      coreSourceEntry('direct', sim.coreBaseUrl(), TENANT, { budget: '90%' }),
      coreSourceEntry('quota', `${gate.url}/api/v1`, QUOTA_TENANT, { dailyQuota: 10, budget: 3, quota: { reservePercent: 50 } }),
    ],
    { concurrency: 2, maxAttempts: 2, expireSeconds: 30 },
  );
  app = await openTestApp(config);
  jobs = await openJobQueue(app, { mode: 'work', superviseSeconds: refreshSuperviseSeconds(config.webhooks), connections: 4 });
  queue = await openRefreshQueue(jobs, config.webhooks);
  const handler = createWebhookReceiver({ config: () => config, pool: app.pool, logger: app.logger, queue }).handler;
  server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiver = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const source of ['gated', 'direct', 'quota']) {
    tokens[source] = newToken();
    const now = new Date();
    await addProvisionalSecret(db.pool, source, hashToken(tokens[source]!), now);
    await activateSecret(db.pool, source, hashToken(tokens[source]!), now, now);
  }
});

afterEach(async () => {
  await worker?.stop();
  worker = null;
  gate.intercept = null;
  gate.release();
});

afterAll(async () => {
  await new Promise<void>((r) => {
    server?.close(() => r());
    server?.closeAllConnections();
  });
  await jobs?.stop();
  await app?.close();
  await gate?.close();
  await foreign?.close();
  await sim?.close();
  await db?.drop();
});

describe('coalescing by record', () => {
  it('events while a refresh waits cost nothing; an event after its fetch started costs exactly one more fetch', async () => {
    const id = customers()[0]!;
    await startWorker();
    gate.holding = true; // the API's answers wait until release()
    const started = gate.arrival(`/customers/${id}`);
    expect(await deliver('gated', `${base('gated')}/customers/${id}`)).toBe('queued');
    await started; // the first fetch has reached the API and read the record as it was

    sim.tenant(TENANT.apikey).update('customers', id, { FirstName: 'Changed-After-Read' });
    expect(await deliver('gated', `${base('gated')}/customers/${id}`)).toBe('queued');
    for (let i = 0; i < 5; i++) expect(await deliver('gated', `${base('gated')}/customers/${id}`)).toBe('coalesced');

    gate.release();
    await waitFor(async () => (await row('gated', id))?.first_name === 'Changed-After-Read', 'the change to land');
    await idle();
    expect(gateFetches(id)).toBe(2);
  });

  it('a burst of 1,000 deliveries with 30% duplicates sends at most one fetch per distinct record', async () => {
    const ids = customers().slice(100, 500);
    const from = gate.requests.length;
    const bodies = Array.from({ length: 700 }, (_, i) => delivery(`${base('gated')}/customers/${ids[i % ids.length]}`));
    const burst = [...bodies, ...Array.from({ length: 300 }, (_, i) => bodies[(i * 7) % bodies.length]!)];
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < burst.length; i += 50) {
      const answers = await Promise.all(burst.slice(i, i + 50).map((b) => post(`${receiver}/webhooks/gated/${tokens.gated}`, b)));
      for (const a of answers) outcomes[(a.body as { status: string }).status] = (outcomes[(a.body as { status: string }).status] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ queued: 400, coalesced: 300, duplicate: 300 });
    await startWorker();
    await idle();
    const fetched = gate.requests.slice(from).filter((r) => r.method === 'GET' && /\/customers\/[^/?]+/.test(r.url));
    expect(fetched.length).toBeLessThanOrEqual(ids.length);
    expect(new Set(fetched.map((r) => r.url.split('?')[0])).size).toBe(ids.length);
    const landed = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE source = $1 AND id = ANY($2)', [
      'gated',
      ids,
    ]);
    expect(landed.rows[0]!.n).toBe(ids.length);
  });
});

describe('what a refresh does with the answer', () => {
  it('a 404 marks the row as no longer visible and keeps it', async () => {
    const id = customers()[1]!;
    await startWorker();
    await deliver('gated', `${base('gated')}/customers/${id}`);
    await waitFor(() => row('gated', id), 'the row');
    sim.tenant(TENANT.apikey).remove('customers', id);
    await deliver('gated', `${base('gated')}/customers/${id}`);
    const gone = await waitFor(async () => {
      const r = await row('gated', id);
      return r?.not_seen_since ? r : undefined;
    }, 'not_seen_since');
    expect(gone.first_name).toBeTruthy();
  });

  it('a redirect is not followed: the refresh is dead-lettered and the foreign host hears nothing', async () => {
    const id = 'redirected-record';
    gate.intercept = (req, res) => {
      if (!req.url?.includes(id)) return false;
      res.writeHead(302, { location: `${foreign.url}/api/v1/customers/${id}` }).end();
      return true;
    };
    await startWorker();
    await deliver('gated', `${base('gated')}/customers/${id}`);
    await waitFor(async () => (await listDeadLetters(app.pool)).find((d) => d.id === id), 'the dead letter');
    expect(gateFetches(id)).toBe(1);
    expect(foreign.requests).toEqual([]);
  });

  it('failures are retried, then dead-lettered after the configured attempts and counted', async () => {
    const id = 'failing-record';
    gate.intercept = (req, res) => {
      if (!req.url?.includes(id)) return false;
      res.writeHead(503).end();
      return true;
    };
    const before = (await refreshQueueCounts(app.pool)).deadLettered;
    await startWorker();
    await deliver('gated', `${base('gated')}/customers/${id}`);
    const dead = await waitFor(async () => (await listDeadLetters(app.pool)).find((d) => d.id === id), 'the dead letter', 30_000);
    expect(dead).toMatchObject({ source: 'gated', resource: 'customers' });
    expect(dead.error).toMatch(/503/);
    // maxAttempts 2, and the client's own policy tries each attempt twice.
    expect(gateFetches(id)).toBe(4);
    expect((await refreshQueueCounts(app.pool)).deadLettered).toBe(before + 1);
  });
});

describe('quota', () => {
  const ledger = () => app.ledgerFor(app.config.sources.find((s) => s.name === 'quota') as CoreSourceConfig);
  /** Sets the key's requests today: `used` in all, `webhook` of them by webhook refreshes. */
  async function setUsed(used: number, webhook = 0): Promise<void> {
    const snap = await ledger().snapshot();
    await db.pool.query(
      `INSERT INTO pmsync.quota_usage (key_id, quota_day, used, used_webhook, daily_limit) VALUES ($1, $2::date, $3, $4, 10)
       ON CONFLICT (key_id, quota_day) DO UPDATE SET used = $3, used_webhook = $4, exhausted_until = NULL`,
      [keyFingerprint(QUOTA_TENANT.apikey), snap.day, used, webhook],
    );
  }

  it('refreshes spend the scheduled-spend budget, whatever backfills have used of the allowance', async () => {
    const id = customers(QUOTA_TENANT)[0]!;
    await setUsed(2); // 2 of the allowance of 5 used by a backfill; the budget of 3 is untouched
    await startWorker();
    await deliver('quota', `${base('quota')}/customers/${id}`);
    await waitFor(() => row('quota', id), 'the refreshed row');
    expect((await ledger().snapshot()).byPurpose.webhook).toBe(1);
  });

  it('with the budget used up, the refresh waits for the reset instead of failing', async () => {
    const id = customers(QUOTA_TENANT)[1]!;
    await setUsed(3, 3);
    const before = (await refreshQueueCounts(app.pool)).deadLettered;
    await startWorker();
    await deliver('quota', `${base('quota')}/customers/${id}`);
    const waiting = await waitFor(async () => {
      const r = await db.pool.query<{ start_after: Date }>(
        `SELECT start_after FROM pgboss.job WHERE name = $1 AND state = 'created' AND singleton_key = $2 AND start_after > now()`,
        [REFRESH_QUEUE, `quota:customers:${id}`],
      );
      return r.rows[0];
    }, 'the deferred refresh');
    expect(waiting.start_after.getTime()).toBe((await ledger().snapshot()).resetsAt.getTime());
    const counts = await refreshQueueCounts(app.pool);
    expect(counts).toMatchObject({ deferred: 1, deadLettered: before });
    expect(gateFetches(id)).toBe(0);
    // Another event for the record joins the waiting refresh.
    expect(await deliver('quota', `${base('quota')}/customers/${id}`)).toBe('coalesced');
  });

  it('a 429 from the API also puts the refresh off until the reset', async () => {
    await setUsed(0);
    const id = customers(QUOTA_TENANT)[2]!;
    gate.intercept = (req, res) => {
      if (!req.url?.includes(id)) return false;
      res.writeHead(429).end();
      return true;
    };
    await startWorker();
    await deliver('quota', `${base('quota')}/customers/${id}`);
    await waitFor(async () => {
      const r = await db.pool.query(
        `SELECT 1 FROM pgboss.job WHERE name = $1 AND state = 'created' AND singleton_key = $2 AND start_after > now()`,
        [REFRESH_QUEUE, `quota:customers:${id}`],
      );
      return r.rowCount;
    }, 'the deferred refresh');
    expect((await ledger().snapshot()).exhaustedUntil).not.toBeNull();
  });
});

describe('a paused source', () => {
  it('gets no refresh: the refresh waits for the end of the pause, and counts as deferred', async () => {
    const id = customers()[3]!;
    const failedAt = app.ctx.now();
    const health = await recordSourceFailure(db.pool, {
      source: 'gated',
      kind: 'auth',
      code: 'AUTH_FAILED',
      message: 'refused',
      at: failedAt,
      ...PAUSES.auth,
    });
    try {
      const before = (await refreshQueueCounts(app.pool)).deadLettered;
      await startWorker();
      await deliver('gated', `${base('gated')}/customers/${id}`);
      const waiting = await waitFor(async () => {
        const r = await db.pool.query<{ start_after: Date }>(
          `SELECT start_after FROM pgboss.job WHERE name = $1 AND state = 'created' AND singleton_key = $2 AND start_after > now()`,
          [REFRESH_QUEUE, `gated:customers:${id}`],
        );
        return r.rows[0];
      }, 'the deferred refresh');
      expect(waiting.start_after.getTime()).toBe(health.pausedUntil!.getTime());
      expect(gateFetches(id)).toBe(0);
      expect((await refreshQueueCounts(app.pool)).deadLettered).toBe(before);
    } finally {
      await recordSourceSuccess(db.pool, 'gated', app.ctx.now());
    }
  });
});

describe('deliveries from the simulator', () => {
  it('retried deliveries (an answer lost on the way back) are applied once', async () => {
    // A proxy in front of the receiver passes each delivery on, then tells the
    // API it failed on the first two attempts: the API retries the same EventId.
    const seen = new Map<string, number>();
    const flaky = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const eventId = (JSON.parse(body.toString()) as { EventId: string }).EventId;
        const n = (seen.get(eventId) ?? 0) + 1;
        seen.set(eventId, n);
        const up = httpRequest(`${receiver}${req.url}`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
          r.resume();
          r.on('end', () => res.writeHead(n <= 2 ? 502 : (r.statusCode ?? 502)).end());
        });
        up.end(body);
      });
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const tenant = sim.tenant(TENANT.apikey);
    const registered = await post(
      `${sim.coreBaseUrl()}/webhooks?apikey=${TENANT.apikey}`,
      {
        EventName: 'Patient.Updated',
        WebhookUrl: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/webhooks/direct/${tokens.direct}`,
      },
      {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${TENANT.username}:${TENANT.password}`).toString('base64')}`,
      },
    );
    expect(registered.status).toBe(200);
    try {
      await startWorker();
      const id = customers()[600]!;
      const from = sim.stats().requests.length;
      tenant.update('customers', id, { FirstName: 'Delivered-Thrice' });
      await sim.webhooksSettled();
      await waitFor(async () => (await row('direct', id))?.first_name === 'Delivered-Thrice', 'the refreshed row');
      await idle();
      expect([...seen.values()]).toEqual([3]);
      const fetches = sim
        .stats()
        .requests.slice(from)
        .filter((r) => r.path === `/api/v1/customers/${id}`);
      expect(fetches).toHaveLength(1);
      const event = await db.pool.query('SELECT duplicates FROM pmsync.webhook_events WHERE source = $1 AND record_id = $2', [
        'direct',
        id,
      ]);
      expect(event.rows).toEqual([{ duplicates: 2 }]);
    } finally {
      await new Promise<void>((r) => flaky.close(() => r()));
      for (const reg of tenant.webhooks()) {
        await fetch(`${sim.coreBaseUrl()}/webhooks/${reg.Id}?apikey=${TENANT.apikey}`, {
          method: 'DELETE',
          headers: { authorization: `Basic ${Buffer.from(`${TENANT.username}:${TENANT.password}`).toString('base64')}` },
        });
      }
    }
  });
});
