/**
 * Part 1, request economy: list requests spent by pmsync, counted at the
 * simulator, next to the minimum and to what simpler clients spend (and get).
 *
 * Per stream, on the same simulator tenant:
 * - pmsync, first (full) sync of N rows: minimum ceil(N/100);
 * - pmsync, incremental after K records of the stream changed: minimum ceil(K/100);
 * - pmsync, incremental with nothing changed: minimum 1;
 * - the vendor docs' pattern: Rows=50, page until a page is shorter than 50;
 * - a naive client asking Rows=500 and stopping on a page shorter than 500.
 *   The server clamps Rows to 100, so the first page is "short" and the client
 *   stops there: it reports success with 100 rows and silently loses the rest.
 * pmsync's own quota ledger is checked against the simulator's count.
 */
import { Writable } from 'node:stream';
import { openApp } from '../src/app.ts';
import { loadConfig } from '../src/config/load.ts';
import { STREAM_REGISTRY } from '../src/sync/stream-registry.ts';
import { type RestSourceConfig } from '../src/config/schema.ts';
import { DEMO_CORE, startSimulator, type CoreResource, type Simulator } from '../simulator/index.ts';
import { syncSource } from '../src/sync/sync-source.ts';
import type { BenchServer } from './support/db.ts';
import { createBenchDatabase } from './support/db.ts';
import { fmtInt, table } from './support/stats.ts';

export interface EconomyOptions {
  /** Rows per stream (N). */
  rows: number;
  log: (line: string) => void;
}

/** Streams measured, with the list path the simulator logs. */
const STREAMS: Array<{ resource: CoreResource; path: string }> = [
  { resource: 'customers', path: '/api/v1/customers' },
  { resource: 'orders', path: '/api/v1/orders' },
  { resource: 'memberships', path: '/api/v1/memberships' },
];
const MAX_ROWS = 100;
const HOUR = 3_600_000;

interface NaiveResult {
  requests: number;
  rows: number;
  distinct: number;
}

/** Requests the simulator logged for `apikey` since `from`, by list path. */
function countSince(sim: Simulator, from: number, apikey: string): Map<string, number> {
  const stats = sim.stats();
  const counts = new Map<string, number>();
  const start = from - stats.requestsDropped;
  if (start < 0) throw new Error('the simulator request log dropped entries the benchmark needs; raise requestLogLimit');
  for (const r of stats.requests.slice(start)) {
    if (r.apikey !== apikey) continue;
    counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
  }
  return counts;
}

function logPosition(sim: Simulator): number {
  const s = sim.stats();
  return s.requests.length + s.requestsDropped;
}

/** The loop from the vendor docs (and most first scripts): page forward until a page is shorter than Rows. */
async function naiveList(sim: Simulator, path: string, rows: number): Promise<NaiveResult> {
  const auth = `Basic ${Buffer.from(`${DEMO_CORE.username}:${DEMO_CORE.password}`).toString('base64')}`;
  const ids = new Set<string>();
  let requests = 0;
  let received = 0;
  for (let page = 1; ; page++) {
    const url = `${sim.url}${path}?apikey=${DEMO_CORE.apikey}&Page=${page}&Rows=${rows}`;
    const res = await fetch(url, { headers: { authorization: auth } });
    requests++;
    if (!res.ok) throw new Error(`naive client: ${url} answered ${res.status}`);
    const body = (await res.json()) as Array<Record<string, unknown>>;
    received += body.length;
    for (const r of body) ids.add(String(Object.values(r)[0]));
    if (body.length < rows) break;
  }
  return { requests, rows: received, distinct: ids.size };
}

export async function runEconomy(server: BenchServer, options: EconomyOptions): Promise<{ markdown: string; data: unknown }> {
  const n = options.rows;
  const changed = Math.max(1, Math.round(n / 40));
  const sizes = Object.fromEntries(STREAMS.map((s) => [s.resource, n]));
  const sim = await startSimulator({ tenants: [{ ...DEMO_CORE, sizes, dailyQuota: 0 }], practices: [], requestLogLimit: 2_000_000 });
  const db = await createBenchDatabase(server);
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const config = loadConfig(STREAM_REGISTRY, {
    env: {
      DATABASE_URL: db.url,
      CORE_SOURCE_NAME: 'bench',
      CORE_BASE_URL: sim.coreBaseUrl(),
      CORE_APIKEY: DEMO_CORE.apikey,
      CORE_USERNAME: DEMO_CORE.username,
      CORE_PASSWORD: DEMO_CORE.password,
      CORE_DAILY_QUOTA: String(100_000_000),
      LOG_LEVEL: 'warn',
    },
  });
  const source = config.sources[0] as RestSourceConfig;
  const resources = STREAMS.map((s) => s.resource);

  /** One `pmsync sync` of the three streams, with pmsync's clock moved `shiftMs` ahead so a new window opens. */
  const pmsyncRun = async (shiftMs: number) => {
    const app = await openApp(config, { now: () => new Date(Date.now() + shiftMs), logDestination: quiet });
    try {
      const before = logPosition(sim);
      const result = await syncSource(app.ctx, source, resources);
      if (result.fatal || result.failures.length > 0) throw result.fatal ?? result.failures[0]!.error;
      const counts = countSince(sim, before, DEMO_CORE.apikey);
      const ledger = Object.fromEntries(result.runs.map((r) => [r.resource, r.requests]));
      const rows = Object.fromEntries(result.runs.map((r) => [r.resource, r.inserted + r.updated + r.unchanged]));
      return { counts, ledger, rows };
    } finally {
      await app.close();
    }
  };

  try {
    options.log(`economy: ${fmtInt(n)} rows per stream, pmsync first sync`);
    const first = await pmsyncRun(0);
    for (const s of STREAMS) sim.tenant(DEMO_CORE.apikey).touch(s.resource, changed);
    const incremental = await pmsyncRun(HOUR);
    const idle = await pmsyncRun(2 * HOUR);
    options.log('economy: vendor-docs and naive clients');
    const rows: string[][] = [];
    const data: Record<string, unknown> = {};
    for (const s of STREAMS) {
      const vendor = await naiveList(sim, s.path, 50);
      const naive500 = await naiveList(sim, s.path, 500);
      const min = Math.ceil(n / MAX_ROWS);
      const get = (m: Map<string, number>) => m.get(s.path) ?? 0;
      const full = get(first.counts);
      const inc = get(incremental.counts);
      const none = get(idle.counts);
      data[s.resource] = {
        n,
        changed,
        min,
        full,
        inc,
        none,
        vendor,
        naive500,
        ledger: { first: first.ledger[s.resource], incremental: incremental.ledger[s.resource], idle: idle.ledger[s.resource] },
        rowsWritten: first.rows[s.resource],
      };
      const mark = (spent: number, minimum: number) =>
        `${fmtInt(spent)} (min ${fmtInt(minimum)}${spent <= minimum + 1 ? ', ok' : ', OVER'})`;
      rows.push([
        s.resource,
        fmtInt(n),
        mark(full, min),
        mark(inc, Math.ceil(changed / MAX_ROWS)),
        mark(none, 1),
        `${fmtInt(vendor.requests)} (${fmtInt(vendor.distinct)} rows)`,
        `${fmtInt(naive500.requests)} (${fmtInt(naive500.distinct)} rows: ${fmtInt(n - naive500.distinct)} lost)`,
      ]);
      const ledgerMatches = first.ledger[s.resource] === full && incremental.ledger[s.resource] === inc && idle.ledger[s.resource] === none;
      if (!ledgerMatches) options.log(`economy: pmsync's ledger (${JSON.stringify(data[s.resource])}) differs from the simulator's count`);
    }
    const total = (m: Map<string, number>) => STREAMS.reduce((sum, s) => sum + (m.get(s.path) ?? 0), 0);
    const markdown = [
      `List requests counted at the simulator (one tenant, ${fmtInt(n)} records per stream; ${fmtInt(changed)} records of each stream changed before the incremental run). "ok" means at most the minimum plus one.`,
      '',
      table(
        [
          'stream',
          'rows',
          'pmsync first sync',
          `pmsync incremental, ${fmtInt(changed)} changed`,
          'pmsync incremental, no change',
          'vendor docs: Rows=50, stop on short page',
          'naive: Rows=500, stop on page < 500',
        ],
        rows,
      ),
      '',
      `Totals over the ${STREAMS.length} streams: pmsync first sync ${fmtInt(total(first.counts))}, incremental ${fmtInt(total(incremental.counts))}, no-change ${fmtInt(total(idle.counts))} requests. pmsync's own quota ledger counted the same requests as the simulator: ${
        STREAMS.every((s) => {
          const d = data[s.resource] as { full: number; inc: number; none: number; ledger: Record<string, number> };
          return d.ledger.first === d.full && d.ledger.incremental === d.inc && d.ledger.idle === d.none;
        })
          ? 'yes'
          : 'NO (see the log)'
      }.`,
      `On the standard plan (1,000 requests a day) a first sync of ${fmtInt(n)} customers costs pmsync ${fmtInt(first.counts.get('/api/v1/customers') ?? 0)} requests; the vendor docs' loop costs ${fmtInt((data.customers as { vendor: NaiveResult }).vendor.requests)}.`,
    ].join('\n');
    return { markdown, data };
  } finally {
    await db.drop();
    await sim.close();
  }
}
