/**
 * What `pmsync status` costs over a fleet: N Core sources (500 by default)
 * configured against the simulator, with a month of recorded state per
 * stream (runs, checkpoints, stream_schedule rows, today's ledger row), some
 * failing, over budget or behind. Times `pmsync status` (the summary) and
 * `status --json --summary` as real processes, and the summary alone in
 * process; and, once, `status --detail`, every source in detail as status
 * printed it before the summary. Run on its own (it is not part of `npm run bench`):
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/status-fleet.ts [--sources 500] [--runs 300]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../simulator/index.ts';
import { openApp, quotaSettingsFor } from '../src/app.ts';
import { loadConfig } from '../src/config/load.ts';
import { STREAM_REGISTRY } from '../src/sync/stream-registry.ts';
import { collectFleet } from '../src/status/fleet.ts';
import { whileReadingQueues } from '../src/status/queues.ts';
import { streamCatalog } from '../src/scheduler/catalog.ts';
import { quotaDayOf } from '../src/state/quota-day.ts';
import { createBenchDatabase, startBenchServer } from './support/db.ts';
import { cliEnv, runCliMeasured } from './support/proc.ts';
import { fmtInt, fmtMs, median, table } from './support/stats.ts';

const { values } = parseArgs({ options: { sources: { type: 'string', default: '500' }, runs: { type: 'string', default: '300' } } });
const SOURCES = Number(values.sources);
/** Finished runs recorded per stream: about a month of checks. */
const RUNS = Number(values.runs);
const ROUNDS = 3;
const log = (line: string) => process.stderr.write(`${line}\n`);

const server = await startBenchServer();
const db = await createBenchDatabase(server);
const sim = await startSimulator({ tenants: [] });
try {
  const sources = Array.from({ length: SOURCES }, (_, i) => ({
    name: `practice-${String(i).padStart(4, '0')}`,
    kind: 'core',
    baseUrl: sim.coreBaseUrl(),
    apikey: `fleet-key-${i}-x9`,
    username: `user${i}`,
    password: `pass-${i}-Q7`,
  }));
  const file = join(mkdtempSync(join(tmpdir(), 'pmsync-fleet-')), 'pmsync.json');
  writeFileSync(file, JSON.stringify({ sources, schedules: { maxStalenessMinutes: 60 } }));
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  const now = new Date();
  const streams = streamCatalog(config.sources[0]!).map((s) => s.resource);
  log(`status-fleet: ${fmtInt(SOURCES)} sources x ${streams.length} streams, ${fmtInt(RUNS)} runs each: seeding`);

  // Every fiftieth source failing, every twentieth over budget, every tenth behind, a few on their first pass.
  const names = config.sources.map((s) => s.name);
  await db.pool.query(
    `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, started_at, ended_at, requests, error_code, error_message)
     SELECT s, r, 'incremental', 'check',
            CASE WHEN n = 1 AND (right(s, 2)::int % 50 = 0) THEN 'failed' ELSE 'succeeded' END,
            $3::timestamptz - n * interval '2 hours', $3::timestamptz - n * interval '2 hours' + interval '3 seconds', 1,
            CASE WHEN n = 1 AND (right(s, 2)::int % 50 = 0) THEN 'AUTH' END,
            CASE WHEN n = 1 AND (right(s, 2)::int % 50 = 0) THEN 'the API refused the gateway key (401 Unauthorized)' END
     FROM unnest($1::text[]) s, unnest($2::text[]) r, generate_series(1, $4::int) n`,
    [names, streams, now, RUNS],
  );
  await db.pool.query(
    `INSERT INTO pmsync.sync_state (source, resource, cursor)
     SELECT s, r, CASE WHEN right(s, 2)::int % 100 = 3 AND r = 'appointments' THEN NULL ELSE $3::timestamptz - interval '20 minutes' END
     FROM unnest($1::text[]) s, unnest($2::text[]) r`,
    [names, streams, now],
  );
  await db.pool.query(
    `INSERT INTO pmsync.stream_schedule (source, resource, last_fire_at, last_done_at, last_check_at, last_outcome, updated_at)
     SELECT s, r, $3::timestamptz - interval '20 minutes', $3::timestamptz - interval '19 minutes',
            $3::timestamptz - CASE WHEN right(s, 2)::int % 10 = 2 AND r = 'customers' THEN interval '5 hours' ELSE interval '20 minutes' END,
            'succeeded', now()
     FROM unnest($1::text[]) s, unnest($2::text[]) r`,
    [names, streams, now],
  );
  const keys = config.sources.map((s) => quotaSettingsFor(s));
  await db.pool.query(
    `INSERT INTO pmsync.quota_usage (key_id, quota_day, used, used_check, daily_limit, budget, updated_at)
     SELECT k, d::date, CASE WHEN i % 20 = 1 THEN 400 ELSE 60 END, CASE WHEN i % 20 = 1 THEN 150 ELSE 40 END, 1000, 150, now()
     FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(k, d, i)`,
    [keys.map((k) => k.keyId), keys.map((k) => quotaDayOf(now, k).day)],
  );
  await db.pool.query('ANALYZE');
  const count = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM pmsync.runs');
  log(`status-fleet: ${fmtInt(Number(count.rows[0]!.n))} runs recorded`);

  const env = cliEnv({ DATABASE_URL: db.url });
  const rows: string[][] = [];
  const measure = async (label: string, args: string[], rounds = ROUNDS) => {
    const times: number[] = [];
    let first = '';
    for (let i = 0; i < rounds; i++) {
      const res = await runCliMeasured(['--config', file, ...args], env);
      if (res.code !== 0) throw new Error(`${args.join(' ')} exited ${res.code}: ${res.stderr}`);
      first ||= res.stdout.split('\n')[0]!;
      times.push(res.wallMs);
    }
    rows.push([label, fmtMs(median(times)), times.map(fmtMs).join(', '), first.slice(0, 70)]);
    log(`status-fleet: ${label}: ${fmtMs(median(times))}`);
  };
  await measure('pmsync status (summary table)', ['status']);
  await measure('pmsync status --json --summary', ['status', '--json', '--summary']);
  await measure('pmsync status --problems --limit 20', ['status', '--problems', '--limit', '20']);
  // What status printed for several sources before the summary: every source in detail.
  await measure('pmsync status --detail (once)', ['status', '--detail'], 1);

  const app = await openApp(config, { migrate: false, logDestination: { write: () => true } });
  const inProcess: number[] = [];
  const verdictsOnly: number[] = [];
  // Next checks read the run queue, through a job queue that only reads, as `pmsync status` opens it.
  await whileReadingQueues(app, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      await collectFleet(app, config);
      inProcess.push(performance.now() - t);
    }
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      await collectFleet(app, config, { nextChecks: false });
      verdictsOnly.push(performance.now() - t);
    }
  });
  await app.close();
  rows.push(['collectFleet in process', fmtMs(median(inProcess)), inProcess.map(fmtMs).join(', '), '']);
  rows.push(['  of it without next checks', fmtMs(median(verdictsOnly)), verdictsOnly.map(fmtMs).join(', '), '']);

  process.stdout.write(
    `## status over ${fmtInt(SOURCES)} sources\n\n${server.label}; ${fmtInt(Number(count.rows[0]!.n))} runs in pmsync.runs; median of ${ROUNDS}.\n\n` +
      `${table(['what', 'median', 'each', 'first line'], rows)}\n`,
  );
} finally {
  await sim.close();
  await db.drop();
  await server.stop();
}
