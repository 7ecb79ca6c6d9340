/**
 * Part 4, webhooks: `pmsync webhooks receive` (receiver and refresh worker in
 * one process, as an operator runs it) against the simulator
 * (`npm run simulator`) in another process, driven through its loopback control API (/__sim/).
 *
 * - Acknowledgement latency: autocannon POSTs valid deliveries, each with a
 *   distinct EventId and pointing to one of the simulator's customers, at a
 *   fixed 200 per second; latency is the client's, request sent to 2xx read.
 *   Measured on a receive-only process (--no-worker) and on the default one,
 *   whose worker refreshes those records meanwhile.
 * - Delivery to row visible: records are changed at the simulator (touch),
 *   then a burst of deliveries (700 distinct events over 500 distinct records,
 *   plus 300 re-sends of those EventIds: 30% duplicates) is posted over 16
 *   connections, at once or paced at 200 per second. Each burst starts from
 *   an empty database, so a record is visible when its row appears; latency
 *   runs from its first delivery being sent. The simulator counts the record
 *   fetches, and pg-boss's job table splits the latency into queue wait and
 *   refresh time.
 *
 * The receiver's secret token is stored the way registration stores it (a
 * SHA-256 hash in pmsync.webhook_secrets), without registering at the
 * simulator, so the simulator sends no deliveries of its own.
 * BENCH_RECEIVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is
 * passed to the receiver processes, to profile them.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import autocannon, { type Result as AutocannonResult } from 'autocannon';
import { DEMO_CORE } from '../simulator/index.ts';
import { hashToken, newToken } from '../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../src/state/webhook-secrets.ts';
import { createBenchDatabase, type BenchDatabase, type BenchServer } from './support/db.ts';
import { CLI, cliEnv, ROOT, startSimulatorProcess } from './support/proc.ts';
import { fmtInt, fmtMs, percentile, table } from './support/stats.ts';

export interface WebhookOptions {
  /** Seconds of deliveries at 200 per second. */
  ackSeconds: number;
  /** Deliveries in the burst (30% of them duplicates). */
  burst: number;
  /** Refresh worker concurrencies to measure the burst with (the first is pmsync's default). */
  concurrencies: number[];
  log: (line: string) => void;
}

const SOURCE = 'bench';
const RATE = 200;
const BURST_CONNECTIONS = 16;
const ACK_TARGET_MS = 20;
const VISIBLE_TARGET_MS = 1000;

function delivery(coreBase: string, id: string, eventId: string, type = 'Patient.Updated'): string {
  return JSON.stringify({
    Application: 'pm-simulator',
    TenantId: 'sim01_1000',
    EventId: eventId,
    EventType: type,
    EventTimestamp: new Date().toISOString(),
    Url: `${coreBase}/customers/${id}`,
  });
}

interface Receiver {
  url: string;
  stop(): Promise<void>;
}

async function startReceiver(configFile: string, db: BenchDatabase, worker: boolean): Promise<Receiver> {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_RECEIVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      CLI,
      '--config',
      configFile,
      'webhooks',
      'receive',
      '--port',
      '0',
      ...(worker ? [] : ['--no-worker']),
    ],
    {
      cwd: ROOT,
      env: cliEnv({ DATABASE_URL: db.url }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the receiver did not start: ${err}`)), 60_000);
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the receiver exited with ${code}: ${err}`));
    });
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function queueIdle(db: BenchDatabase, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const r = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'pmsync-refresh' AND state IN ('created', 'retry', 'active')`,
    );
    if (r.rows[0]!.n === 0) return true;
    await new Promise((res) => setTimeout(res, 50));
  }
  return false;
}

interface BurstResult {
  concurrency: number;
  rate: number | undefined;
  deliveries: number;
  duplicates: number;
  events: number;
  records: number;
  visible: number;
  p50: number;
  p99: number;
  max: number;
  fetches: number;
  sendMs: number;
  /** Refresh jobs: waiting in the queue (created to started) and running (started to completed), p50 and p99 in ms. */
  jobWait: { p50: number; p99: number };
  jobRun: { p50: number; p99: number };
  /** When the first and the last row became visible, from the start of the burst. */
  firstVisibleMs: number;
  lastVisibleMs: number;
  outcomes: { queued: number; coalesced: number; duplicate: number };
}

interface Round {
  kind: 'ack' | 'burst';
  worker: boolean;
  concurrency: number;
  /** Deliveries per second of a burst; undefined: as fast as the connections allow. */
  rate?: number;
}

export async function runWebhooks(server: BenchServer, options: WebhookOptions): Promise<{ markdown: string; data: unknown }> {
  const ackCount = RATE * options.ackSeconds;
  const burstRecords = Math.round(options.burst * 0.5);
  const burstEvents = Math.round(options.burst * 0.7);
  const defaultConcurrency = options.concurrencies[0]!;
  const rounds: Round[] = [
    { kind: 'ack', worker: false, concurrency: defaultConcurrency },
    { kind: 'ack', worker: true, concurrency: defaultConcurrency },
    ...options.concurrencies.map((concurrency): Round => ({ kind: 'burst', worker: true, concurrency })),
    { kind: 'burst', worker: true, concurrency: defaultConcurrency, rate: RATE },
  ];
  const customers = Math.max(10_000, 2 * (ackCount + burstRecords));
  const sim = await startSimulatorProcess(['--customers', String(customers), '--quota', '0']);
  const control = new SimulatorControl(sim.url);
  const coreBase = `${sim.url}/api/v1`;
  const ackIds = await control.touch(ackCount);
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-bench-wh-'));
  const acks: Array<{ worker: boolean; result: AutocannonResult }> = [];
  const bursts: BurstResult[] = [];
  try {
    for (const round of rounds) {
      const db = await createBenchDatabase(server);
      const token = newToken();
      const now = new Date();
      await addProvisionalSecret(db.pool, SOURCE, hashToken(token), now);
      await activateSecret(db.pool, SOURCE, hashToken(token), now, now);
      const configFile = join(dir, 'pmsync.json');
      writeFileSync(
        configFile,
        JSON.stringify({
          sources: [
            {
              kind: 'core',
              name: SOURCE,
              baseUrl: coreBase,
              apikey: DEMO_CORE.apikey,
              username: DEMO_CORE.username,
              password: DEMO_CORE.password,
              dailyQuota: 1_000_000_000,
            },
          ],
          // This part measures record refreshes: each notification fetches its record (the default, "auto",
          // leaves notifications to the scheduler, which `webhooks receive` does not run).
          webhooks: { concurrency: round.concurrency, refresh: 'record' },
        }),
      );
      const receiver = await startReceiver(configFile, db, round.worker);
      const target = `${receiver.url}/webhooks/${SOURCE}/${token}`;
      try {
        if (round.kind === 'ack') {
          options.log(`webhooks: ${fmtInt(ackCount)} deliveries at ${RATE}/s, ${round.worker ? 'receiver and worker' : 'receive-only'}`);
          let n = 0;
          const result = await autocannon({
            url: target,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            connections: 10,
            overallRate: RATE,
            amount: ackCount,
            timeout: 10,
            requests: [{ setupRequest: (req) => ({ ...req, body: delivery(coreBase, ackIds[n++ % ackIds.length]!, randomUUID()) }) }],
          });
          acks.push({ worker: round.worker, result });
          options.log(`webhooks: ack p50 ${fmtMs(result.latency.p50)}, p99 ${fmtMs(result.latency.p99)}`);
        } else {
          const b = await burst(coreBase, target, db, control, burstRecords, burstEvents, options.burst, round.concurrency, round.rate);
          bursts.push(b);
          options.log(
            `webhooks burst (${round.rate === undefined ? 'at once' : `${round.rate}/s`}, worker concurrency ${round.concurrency}): sent in ${fmtMs(b.sendMs)}, rows visible from ${fmtMs(b.firstVisibleMs)} to ${fmtMs(b.lastVisibleMs)}, p50 ${fmtMs(b.p50)}, p99 ${fmtMs(b.p99)}; jobs waited p50 ${fmtMs(b.jobWait.p50)} p99 ${fmtMs(b.jobWait.p99)}, ran p50 ${fmtMs(b.jobRun.p50)} p99 ${fmtMs(b.jobRun.p99)}; ${b.fetches} fetches for ${b.records} records`,
          );
        }
      } finally {
        await receiver.stop();
        await db.drop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sim.stop();
  }
  const markdown = [
    '`pmsync webhooks receive` in its own process (PostgreSQL inbox and pg-boss queue on the bench PostgreSQL), the simulator (`npm run simulator`) in another, deliveries sent from the benchmark process. Each row starts from an empty database.',
    '',
    `Acknowledgement latency: autocannon, 10 connections, ${fmtInt(ackCount)} valid deliveries at ${RATE} per second, each with a distinct EventId and pointing to one of ${fmtInt(ackCount)} customers; every accepted delivery is stored and its refresh queued in one transaction before the reply. "receive-only" is \`webhooks receive --no-worker\` (a replica that only queues); "with worker" also runs the refreshes those deliveries queue, on the same machine, while it answers.`,
    '',
    table(
      ['process', 'sent', '2xx', 'errors', 'p50', 'p99', 'max', `p99 under ${ACK_TARGET_MS} ms`],
      acks.map(({ worker, result }) => [
        worker ? 'receiver with worker (default)' : 'receive-only',
        fmtInt(result.requests.total),
        fmtInt(result['2xx']),
        fmtInt(result.non2xx + result.errors + result.timeouts),
        fmtMs(result.latency.p50),
        fmtMs(result.latency.p99),
        fmtMs(result.latency.max),
        result.latency.p99 < ACK_TARGET_MS ? 'yes' : 'NO',
      ]),
    ),
    '',
    `Delivery to row visible: a burst of ${fmtInt(options.burst)} deliveries over ${BURST_CONNECTIONS} connections, sent at once or paced at ${RATE} per second: ${fmtInt(burstEvents)} distinct events for ${fmtInt(burstRecords)} distinct records (every record changed at the simulator first; ${fmtInt(burstEvents - burstRecords)} records get a second event) and ${fmtInt(options.burst - burstEvents)} re-sends of those EventIds (duplicates). Latency runs from a record's first delivery being sent to its row appearing in the (new) database, polled every 10 ms. Record fetches are the requests the simulator answered during the burst.`,
    '',
    table(
      [
        'sent',
        'worker concurrency',
        'burst sent in',
        'first / last row visible after',
        'records visible',
        'p50',
        'p99',
        'max',
        'jobs waited p50 / p99',
        'job ran p50 / p99',
        'record fetches',
        'outcomes: queued / coalesced / duplicate',
        `p99 under ${VISIBLE_TARGET_MS} ms`,
        'fetches <= distinct records',
      ],
      bursts.map((b) => [
        b.rate === undefined ? `at once (${BURST_CONNECTIONS} connections)` : `${b.rate}/s`,
        `${b.concurrency}${b.concurrency === defaultConcurrency ? ' (default)' : ''}`,
        fmtMs(b.sendMs),
        `${fmtMs(b.firstVisibleMs)} / ${fmtMs(b.lastVisibleMs)}`,
        `${fmtInt(b.visible)} of ${fmtInt(b.records)}`,
        fmtMs(b.p50),
        fmtMs(b.p99),
        fmtMs(b.max),
        `${fmtMs(b.jobWait.p50)} / ${fmtMs(b.jobWait.p99)}`,
        `${fmtMs(b.jobRun.p50)} / ${fmtMs(b.jobRun.p99)}`,
        `${fmtInt(b.fetches)} for ${fmtInt(b.records)} records, ${fmtInt(b.events)} events`,
        `${fmtInt(b.outcomes.queued)} / ${fmtInt(b.outcomes.coalesced)} / ${fmtInt(b.outcomes.duplicate)}`,
        b.p99 < VISIBLE_TARGET_MS && b.visible === b.records ? 'yes' : 'NO',
        b.fetches <= b.records ? 'yes' : `NO (+${fmtInt(b.fetches - b.records)})`,
      ]),
    ),
  ].join('\n');
  return {
    markdown,
    data: {
      acks: acks.map(({ worker, result }) => ({
        worker,
        latency: result.latency,
        total: result.requests.total,
        non2xx: result.non2xx,
        errors: result.errors,
      })),
      bursts,
    },
  };
}

/** The simulator in its own process, driven through its loopback control API. */
class SimulatorControl {
  private readonly url: string;

  constructor(url: string) {
    this.url = url;
  }

  /** Changes `count` distinct records (ModifiedOn = now) and returns their ids. */
  async touch(count: number): Promise<string[]> {
    const res = await fetch(`${this.url}/__sim/touch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apikey: DEMO_CORE.apikey, resource: 'customers', count }),
    });
    if (!res.ok) throw new Error(`simulator touch answered ${res.status}`);
    return ((await res.json()) as { ids: string[] }).ids;
  }

  /** Requests the simulator has answered for the tenant so far. */
  async requests(): Promise<number> {
    const res = await fetch(`${this.url}/__sim/stats?requests=0`);
    const stats = (await res.json()) as { byApikey: Record<string, { requests: number }> };
    return stats.byApikey[DEMO_CORE.apikey]?.requests ?? 0;
  }
}

async function burst(
  coreBase: string,
  target: string,
  db: BenchDatabase,
  control: SimulatorControl,
  recordCount: number,
  eventCount: number,
  total: number,
  concurrency: number,
  rate: number | undefined,
): Promise<BurstResult> {
  // The records change first; the database is new, so a row appearing is the refreshed record.
  const recordIds = await control.touch(recordCount);
  // Every record gets one event; the rest of the events go to records already named.
  const events = Array.from({ length: eventCount }, (_, i) => ({ id: recordIds[i % recordIds.length]!, eventId: randomUUID() }));
  const sends = [...events.map((e) => ({ ...e, duplicate: false }))];
  for (let i = 0; i < total - eventCount; i++) {
    const original = events[(i * 7) % events.length]!;
    // A re-send lands after its original, somewhere later in the burst.
    const at = Math.min(sends.length, sends.findIndex((s) => s.eventId === original.eventId) + 1 + ((i * 13) % 200));
    sends.splice(at, 0, { ...original, duplicate: true });
  }
  const requestsBefore = await control.requests();
  const firstSent = new Map<string, number>();
  const visibleAt = new Map<string, number>();
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const pending = recordIds.filter((id) => !visibleAt.has(id) && firstSent.has(id));
      if (pending.length > 0) {
        const r = await db.pool.query<{ id: string }>('SELECT id FROM customers WHERE source = $1 AND id = ANY($2::text[])', [
          SOURCE,
          pending,
        ]);
        const at = performance.now();
        for (const row of r.rows) visibleAt.set(row.id, at);
      }
      await new Promise((res) => setTimeout(res, 10));
    }
  })();
  const t0 = performance.now();
  let next = 0;
  const senders = Array.from({ length: BURST_CONNECTIONS }, async () => {
    while (next < sends.length) {
      const index = next++;
      const s = sends[index]!;
      if (rate !== undefined) {
        const due = t0 + (index * 1000) / rate;
        if (due > performance.now()) await new Promise((res) => setTimeout(res, due - performance.now()));
      }
      if (!firstSent.has(s.id)) firstSent.set(s.id, performance.now());
      const res = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: delivery(coreBase, s.id, s.eventId),
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`delivery answered ${res.status}`);
    }
  });
  await Promise.all(senders);
  const sendMs = performance.now() - t0;
  const until = Date.now() + 120_000;
  while (visibleAt.size < recordIds.length && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
  await queueIdle(db, 60_000);
  polling = false;
  await poller;
  // Only the refresh worker talks to the simulator during the burst: every request it answered is a record fetch.
  const fetches = (await control.requests()) - requestsBefore;
  const outcomes = await db.pool.query<{ queued: number; coalesced: number; duplicate: number }>(
    `SELECT count(*) FILTER (WHERE outcome = 'queued')::int AS queued, count(*) FILTER (WHERE outcome = 'coalesced')::int AS coalesced, coalesce(sum(duplicates), 0)::int AS duplicate
     FROM pmsync.webhook_events WHERE source = $1 AND record_id = ANY($2::text[])`,
    [SOURCE, recordIds],
  );
  const jobs = await db.pool.query<{ wait: number; run: number }>(
    `SELECT extract(epoch FROM started_on - created_on)::float8 * 1000 AS wait, extract(epoch FROM completed_on - started_on)::float8 * 1000 AS run
     FROM pgboss.job WHERE name = 'pmsync-refresh' AND state = 'completed' AND data->>'id' = ANY($1::text[])`,
    [recordIds],
  );
  const waits = jobs.rows.map((j) => j.wait);
  const runs = jobs.rows.map((j) => j.run);
  const latencies = recordIds.filter((id) => visibleAt.has(id)).map((id) => visibleAt.get(id)! - firstSent.get(id)!);
  return {
    concurrency,
    rate,
    deliveries: sends.length,
    duplicates: sends.filter((s) => s.duplicate).length,
    events: eventCount,
    records: recordIds.length,
    visible: visibleAt.size,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: Math.max(...latencies),
    fetches,
    sendMs,
    jobWait: { p50: percentile(waits, 50), p99: percentile(waits, 99) },
    jobRun: { p50: percentile(runs, 50), p99: percentile(runs, 99) },
    firstVisibleMs: Math.min(...visibleAt.values()) - t0,
    lastVisibleMs: Math.max(...visibleAt.values()) - t0,
    outcomes: outcomes.rows[0]!,
  };
}
