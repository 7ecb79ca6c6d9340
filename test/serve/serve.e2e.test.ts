/**
 * `pmsync serve` as a child process against the simulator and a real
 * PostgreSQL: endpoints, replicas sharing a database, and a SIGTERM mid-run.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, writeConfig } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';
import { eventually, kill, startServeCli, type ServeProcess } from './support.ts';

const TENANT = { apikey: 'serve-key-K2', username: 'serve.user', password: 'serve-pass-Q8', variant: 'core' as const };
/** Two more practices, for a replica serving several. */
const OTHERS = ['serve-key-B3', 'serve-key-C4'].map((apikey) => ({ ...TENANT, apikey }));
const SIZES = {
  customers: 1_500,
  companies: 2,
  appointments: 200,
  orders: 150,
  memberships: 40,
  membershipprograms: 4,
  giftcertificates: 30,
  products: 10,
  services: 8,
  employees: 5,
};
const STREAMS = 10;

let sim: Simulator;
let db: TestDatabase;
const started: ServeProcess[] = [];

/**
 * Yearly schedules: no timer fires while a test runs, so every run seen comes
 * from the start-up catch-up (a schedule never fired counts as missed).
 */
function configFile(overrides: unknown[] = [], practices = 1): string {
  return writeConfig({
    sources: [TENANT, ...OTHERS].slice(0, practices).map((tenant, i) => ({
      name: i === 0 ? 'clinic' : `clinic-${i}`,
      kind: 'core',
      baseUrl: sim.coreBaseUrl(),
      apikey: tenant.apikey,
      username: TENANT.username,
      password: TENANT.password,
      lagSeconds: 0,
    })),
    schedules: { incremental: '@yearly', full: '@yearly', overrides },
  });
}

async function serve(config: string, args: string[] = []): Promise<ServeProcess> {
  const p = await startServeCli(['--config', config, ...args], cliEnv({ DATABASE_URL: db.url }));
  started.push(p);
  return p;
}

async function runsOf(resource?: string) {
  const res = await db.pool.query<{ resource: string; status: string; pages: number; started_at: Date; ended_at: Date | null }>(
    `SELECT resource, status, pages, started_at, ended_at FROM pmsync.runs WHERE source = 'clinic' AND ($1::text IS NULL OR resource = $1) ORDER BY id`,
    [resource ?? null],
  );
  return res.rows;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, tenants: [TENANT, ...OTHERS].map((t) => ({ ...t, sizes: SIZES })) });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  for (const p of started.splice(0)) {
    kill(p.child, 'SIGKILL');
    await p.exited;
  }
  sim.setFaults({});
  await db?.drop();
});

describe('pmsync serve', () => {
  it('answers /healthz, /readyz and /metrics with the named series, refreshes records on webhooks, and exits 0 on SIGTERM', async () => {
    db = await createTestDatabase();
    const p = await serve(configFile());
    expect(await (await fetch(`${p.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${p.url}/readyz`)).json()).toEqual({ status: 'ready' });
    // A first start loads every stream at once (each schedule's missed first fire).
    await eventually(
      async () => ((await runsOf()).filter((r) => r.status === 'succeeded').length === STREAMS ? true : undefined),
      'the first runs',
    );
    const res = await fetch(`${p.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const series of [
      /^pmsync_requests_total\{source="clinic",resource="customers"\} \d+$/m,
      /^pmsync_quota_remaining\{source="clinic"\} \d+$/m,
      /^pmsync_quota_used\{source="clinic"\} [1-9]\d*$/m,
      /^pmsync_rows_total\{source="clinic",resource="customers",outcome="inserted"\} 1500$/m,
      /^pmsync_rows_total\{source="clinic",resource="customers",outcome="unchanged"\} 0$/m,
      /^pmsync_rows_total\{source="clinic",resource="customers",outcome="rejected"\} 0$/m,
      /^pmsync_run_duration_seconds_count\{resource="customers",mode="incremental",status="succeeded"\} 1$/m,
      /^pmsync_runs_total\{source="clinic",resource="companies",status="succeeded"\} 1$/m,
      /^pmsync_dispatches_total\{source="clinic",resource="orders",purpose="backfill",reason="cron \(first fire\)"\} 1$/m,
      /^pmsync_requests_today\{source="clinic",purpose="backfill"\} [1-9]\d*$/m,
      /^pmsync_requests_today\{source="clinic",purpose="check"\} 0$/m,
      /^pmsync_budget\{source="clinic"\} 150$/m,
      /^pmsync_requests_planned\{source="clinic",purpose="check"\} \d+$/m,
      /^pmsync_stream_staleness_seconds\{source="clinic",resource="customers"\} [\d.]+$/m,
      /^pmsync_last_success_timestamp_seconds\{source="clinic",resource="orders"\} \d+/m,
      /^# TYPE pmsync_errors_total counter$/m,
      /^# TYPE pmsync_runs_in_progress gauge$/m,
      /^pmsync_webhook_backlog 0$/m,
      /^pmsync_webhook_dead_letters 0$/m,
      /^pmsync_ready 1$/m,
      /^# TYPE pmsync_stream_staleness_target_seconds gauge$/m,
      /^# TYPE pmsync_quarantined_records gauge$/m,
    ]) {
      expect(text).toMatch(series);
    }
    expect((await fetch(`${p.url}/nope`)).status).toBe(404);

    // The status page, where serve binds.
    const statusPage = await fetch(`${p.url}/`);
    expect(statusPage.status).toBe(200);
    expect(statusPage.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(statusPage.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const html = await statusPage.text();
    expect(html).toMatch(/<h2 id="source-clinic">Source clinic <small>\(core\)<\/small><\/h2>/);
    expect(html).toMatch(/<tr data-stream="customers">/);

    // The webhook receiver is mounted and its refresh worker runs in the same process.
    const token = newToken();
    await addProvisionalSecret(db.pool, 'clinic', hashToken(token), new Date());
    await activateSecret(db.pool, 'clinic', hashToken(token), new Date(), new Date());
    expect((await fetch(`${p.url}/webhooks/clinic/${newToken()}`, { method: 'POST' })).status).toBe(401);
    const tenant = sim.tenant(TENANT.apikey);
    const [target] = tenant.list('customers', { limit: 1 }) as Array<{ CustomerId: string }>;
    tenant.update('customers', target!.CustomerId, { FirstName: 'Hooked' });
    const delivery = await fetch(`${p.url}/webhooks/clinic/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        Application: 'test',
        TenantId: 'node1_clinic',
        EventId: 'evt-serve-1',
        EventType: 'Patient.Updated',
        EventTimestamp: new Date().toISOString(),
        Url: `${sim.coreBaseUrl()}/customers/${target!.CustomerId}`,
      }),
    });
    expect(delivery.status).toBe(200);
    await eventually(
      async () =>
        (await db.pool.query<{ first_name: string }>('SELECT first_name FROM customers WHERE id = $1', [target!.CustomerId])).rows[0]
          ?.first_name === 'Hooked'
          ? true
          : undefined,
      'the webhook refresh',
    );

    kill(p.child);
    const result = await p.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/"msg":"stopped"/);
  });

  it('with two replicas on one database, runs each fire once and never one stream twice at a time', async () => {
    db = await createTestDatabase();
    const config = configFile();
    const [a, b] = await Promise.all([serve(config), serve(config, ['--no-webhooks'])]);
    expect((await fetch(`${b!.url}/webhooks/clinic/x`, { method: 'POST' })).status).toBe(404);
    await eventually(
      async () => ((await runsOf()).filter((r) => r.status === 'succeeded').length >= STREAMS ? true : undefined),
      'the first runs',
    );
    const runs = await runsOf();
    const perStream = new Map<string, number>();
    for (const r of runs) perStream.set(r.resource, (perStream.get(r.resource) ?? 0) + 1);
    expect([...perStream.values()]).toEqual(Array(STREAMS).fill(1));
    for (const p of [a!, b!]) kill(p.child);
    expect((await a!.exited).code).toBe(0);
    expect((await b!.exited).code).toBe(0);
  });

  it('holds at most 12 PostgreSQL connections while its workers run at their concurrency, webhooks received', async () => {
    db = await createTestDatabase();
    const sampler = new pg.Client({ connectionString: db.url, application_name: 'connection sampler' });
    await sampler.connect();
    try {
      const t0 = (await sampler.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0]!.t;
      // Three practices: a dozen first passes at once, slowly enough to be caught running four at a time.
      sim.setFaults({ slowMs: 40 });
      await serve(configFile([], 3));
      let peak = 0;
      let runningAtPeak = 0;
      // Who held the connections at the peak (application_name: count), for a failure to say.
      let heldAtPeak: string | null = null;
      let busiest = 0;
      // A guard against a hang, stretched on a slow machine (PMSYNC_TEST_TIME_SCALE): the runs end the loop.
      const deadline = Date.now() + scaled(60_000);
      while (Date.now() < deadline) {
        const res = await sampler.query<{ connections: number; running: number; held: string | null }>(
          // Client connections only: a parallel query's workers show in pg_stat_activity too (backend_type 'parallel
          // worker'), but they are the server's processes, counted against max_worker_processes, not max_connections,
          // and a pooler never sees them.
          `WITH held AS (SELECT application_name AS name FROM pg_stat_activity
                         WHERE datname = current_database() AND backend_start >= $1 AND pid <> pg_backend_pid()
                           AND backend_type = 'client backend')
           SELECT (SELECT count(*) FROM held)::int AS connections,
                  (SELECT string_agg(name || ': ' || n, ', ') FROM (SELECT name, count(*) AS n FROM held GROUP BY name) AS g) AS held,
                  (SELECT count(*) FROM pmsync.runs WHERE status = 'running')::int AS running`,
          [t0],
        );
        const { connections, running, held } = res.rows[0]!;
        busiest = Math.max(busiest, running);
        if (connections > peak) [peak, runningAtPeak, heldAtPeak] = [connections, running, held];
        if (busiest >= 4 && (await sampler.query(`SELECT 1 FROM pmsync.runs WHERE status = 'running'`)).rowCount === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // The workers ran at their concurrency (4), and the replica never held more than 12 connections.
      expect(busiest).toBe(4);
      expect(peak, `peak ${peak} connections with ${runningAtPeak} runs running (${heldAtPeak})`).toBeLessThanOrEqual(12);
      expect(peak).toBeGreaterThanOrEqual(5);
    } finally {
      await sampler.end();
    }
  });

  it('stops at a page boundary on SIGTERM and resumes the run where it stopped on the next start', async () => {
    db = await createTestDatabase();
    // Only customers, read in small pages slowly enough to be caught mid-run.
    const config = configFile([{ cron: 'off' }, { resource: 'customers', cron: '@yearly' }]);
    sim.setFaults({ slowMs: 150 });
    const first = await serve(config);
    await eventually(async () => ((await runsOf('customers'))[0]?.pages ?? 0) >= 2 || undefined, 'two committed pages');
    kill(first.child);
    const stopped = await first.exited;
    expect(stopped.code).toBe(0);
    const [interrupted] = await runsOf('customers');
    expect(interrupted!.status).toBe('interrupted');
    const state = await db.pool.query<{ window: { nextPage: number } | null }>(
      `SELECT "window" FROM pmsync.sync_state WHERE source = 'clinic' AND resource = 'customers'`,
    );
    expect(state.rows[0]!.window).not.toBeNull();
    const stored = (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM customers`)).rows[0]!.n;
    expect(stored).toBe(interrupted!.pages * 100);

    sim.setFaults({});
    const second = await serve(config);
    await eventually(async () => ((await runsOf('customers'))[1]?.status === 'succeeded' ? true : undefined), 'the resumed run');
    expect(second.child.output.stderr).toMatch(/"msg":"resuming a run stopped part-way"/);
    const runs = await runsOf('customers');
    expect(runs.length).toBe(2);
    // Every page was read exactly once across the two runs.
    expect(runs[0]!.pages + runs[1]!.pages).toBe(Math.ceil(SIZES.customers / 100));
    expect((await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM customers`)).rows[0]!.n).toBe(SIZES.customers);
    kill(second.child);
    expect((await second.exited).code).toBe(0);
  });
});
