/**
 * The decider alone: what scheduling costs as the fleet grows, with no API
 * traffic. N Core sources in one PostgreSQL, each with stored change models
 * (the reference day's hours and volumes, four weeks of them), checkpoints and
 * schedules, are decided by the real scheduler (src/scheduler/scheduler.ts)
 * on an injected clock moved through the reference day a tick at a time. A
 * run it dispatches ends at the next tick, written to state as a run would
 * write it (its run row with the window and the changes the reference day put
 * in it, the stream's schedule and checkpoint, the quota ledger, the change
 * model's slot), so every source's inputs change as they would in serve.
 * With --webhooks, the busy streams' changes are also notified, as the
 * webhook receiver records them. The queue and the API are left out:
 * dispatched jobs go to an in-memory list.
 *
 *   node bench/decider.ts --sources 5000                 a day, a tick every 15 s, deciding on change
 *   node bench/decider.ts --sources 500 --every-tick     planning every source at every tick, as before
 *   node bench/decider.ts --sources 5000 --from 10 --to 11 --every-tick   one busy hour of it
 *   node bench/decider.ts --sources 20000 --tick-seconds 60 --webhooks
 *   node bench/decider.ts --sources 1000 --history-days 28   with four weeks of runs stored before the day
 *   node bench/decider.ts --sources 300 --dispatches /tmp/a.txt   every dispatch written down, to compare two versions
 *
 * BENCH_DATABASE_URL points it at a PostgreSQL (the embedded one otherwise).
 * Reported: the decider's CPU per tick (process.cpuUsage around each tick,
 * the harness's writes outside it) and wall time per tick, in the busy hours
 * (8-19 local) and over the day, against the sources read again and planned
 * at each tick.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { planDay, REFERENCE_DAY } from '../simulator/day.ts';
import { quotaSettingsFor } from '../src/app.ts';
import { loadConfig } from '../src/config/load.ts';
import { createPool } from '../src/db/pool.ts';
import { streamCatalog } from '../src/scheduler/catalog.ts';
import type { RunJob } from '../src/scheduler/dispatch.ts';
import { Scheduler, type DecideStats } from '../src/scheduler/scheduler.ts';
import { QuotaLedger } from '../src/state/quota.ts';
import { quotaDayOf } from '../src/state/quota-day.ts';
import { STREAM_REGISTRY } from '../src/sync/stream-registry.ts';
import { slotOf } from '../src/time.ts';
import { HOUR, localMidnight, MINUTE } from './support/day-rig.ts';
import { createBenchDatabase, startBenchServer } from './support/db.ts';
import { fmtInt, fmtNum, percentile, table } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    sources: { type: 'string', default: '500' },
    'tick-seconds': { type: 'string', default: '15' },
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: '24' },
    'every-tick': { type: 'boolean', default: false },
    webhooks: { type: 'boolean', default: false },
    'history-days': { type: 'string', default: '0' },
    dispatches: { type: 'string' },
  },
});
const SOURCES = Number(values.sources);
const TICK = Number(values['tick-seconds']) * 1000;
const FROM_HOUR = Number(values.from);
const TO_HOUR = Number(values.to);
const EVERY_TICK = values['every-tick'] === true;
const WEBHOOKS = values.webhooks === true;
const HISTORY_DAYS = Number(values['history-days']);
/** Where to write every dispatch (its tick, source, stream, purpose and reason), a line each: two versions' files compare with diff. */
const DISPATCHES = values.dispatches;
if (!Number.isInteger(HISTORY_DAYS) || HISTORY_DAYS < 0)
  throw new Error(`--history-days: "${values['history-days']}" is not a whole number of days`);
for (const [name, v] of [
  ['--sources', SOURCES],
  ['--tick-seconds', TICK / 1000],
] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: "${v}" is not a positive whole number`);
}
if (!(FROM_HOUR >= 0 && TO_HOUR <= 24 && FROM_HOUR < TO_HOUR)) throw new Error('--from and --to: hours of the day, from before to');

const DATE = '2027-11-18';
const ZONE = 'America/New_York';
const BUSY_FROM = 8;
const BUSY_TO = 19;
const LAG_MS = 120_000;
const log = (line: string) => process.stderr.write(`[decider ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** The reference day's changes, once; each source plays them shifted by up to half an hour, so practices do not move in step. */
const dayStart = localMidnight(DATE, ZONE);
const planned = planDay(REFERENCE_DAY, DATE, ZONE, 7);
const changeTimes = new Map<string, number[]>();
for (const c of planned) {
  const list = changeTimes.get(c.resource) ?? [];
  list.push(c.at);
  changeTimes.set(c.resource, list);
}
for (const list of changeTimes.values()) list.sort((a, b) => a - b);
const shiftOf = (i: number) => ((i * 7919) % 61) * MINUTE - 30 * MINUTE;
/** Changes of `resource` at source i in [from, to). */
function changesIn(resource: string, i: number, from: number, to: number): number {
  const list = changeTimes.get(resource);
  if (!list) return 0;
  const shift = shiftOf(i);
  const lower = (x: number) => {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return lower(to - shift) - lower(from - shift);
}

/** The stored model of a stream: four weeks of the reference pattern (Sundays closed), slot by slot. */
function modelRows(resource: string): Array<[slot: number, changes: number, exposure: number]> {
  const total = REFERENCE_DAY.changes[resource as keyof typeof REFERENCE_DAY.changes]?.total ?? 0;
  const shape = REFERENCE_DAY.shape;
  const sum = shape.reduce((a, b) => a + b, 0);
  const rows: Array<[number, number, number]> = [];
  for (let d = 0; d < 7; d++) {
    for (let h = 0; h < 24; h++) {
      const open = d !== 0 && h >= REFERENCE_DAY.openHour && h < REFERENCE_DAY.closeHour;
      rows.push([d * 24 + h, open ? (4 * total * shape[h - REFERENCE_DAY.openHour]!) / sum : 0, 4]);
    }
  }
  return rows;
}

const server = await startBenchServer();
const db = await createBenchDatabase(server);
const started = performance.now();
try {
  const names = Array.from({ length: SOURCES }, (_, i) => `practice-${String(i).padStart(5, '0')}`);
  const file = join(mkdtempSync(join(tmpdir(), 'pmsync-decider-')), 'pmsync.json');
  writeFileSync(
    file,
    JSON.stringify({
      sources: names.map((name, i) => ({
        name,
        kind: 'core',
        // Never contacted: the decider only decides.
        baseUrl: 'http://127.0.0.1:9/api/v1',
        apikey: `decider-key-${i}-x9`,
        username: `user${i}`,
        password: `pass-${i}-Q7`,
        timeZone: ZONE,
        quota: { timeZone: ZONE, resetHour: 0 },
        lagSeconds: LAG_MS / 1000,
      })),
      schedules: { tickSeconds: TICK / 1000 },
    }),
  );
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  const catalog = streamCatalog(config.sources[0]!);
  const incremental = catalog.filter((s) => s.kind === 'incremental').map((s) => s.resource);
  const everyStream = catalog.map((s) => s.resource);
  const busy = ['appointments', 'customers', 'orders'];
  log(`${fmtInt(SOURCES)} sources x ${catalog.length} streams: seeding state`);

  // Seeding writes millions of rows: the change log's triggers are left out of it (the decider reads everything once).
  const seed = await db.pool.connect();
  try {
    await seed.query("SET session_replication_role = 'replica'");
    const seededAt = new Date(dayStart - 10 * MINUTE);
    for (const resource of incremental) {
      const rows = modelRows(resource);
      if (rows.every(([, c]) => c === 0) && !['products', 'services', 'employees'].includes(resource)) continue;
      await seed.query(
        `INSERT INTO pmsync.change_model (source, resource, slot, changes, exposure_hours, recent_changes, recent_exposure_hours, as_of)
         SELECT s, $2, m.slot, m.changes, m.exposure, m.changes / 4 * 1.4, 1.4, $6
         FROM unnest($1::text[]) s, unnest($3::int[], $4::float8[], $5::float8[]) AS m(slot, changes, exposure)`,
        [names, resource, rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), seededAt],
      );
    }
    await seed.query(
      `INSERT INTO pmsync.sync_state (source, resource, cursor) SELECT s, r, $3 FROM unnest($1::text[]) s, unnest($2::text[]) r`,
      [names, everyStream, seededAt],
    );
    await seed.query(
      `INSERT INTO pmsync.stream_schedule (source, resource, last_fire_at, last_done_at, last_check_at, last_outcome)
       SELECT s, r, $3, $3, $3, 'succeeded' FROM unnest($1::text[]) s, unnest($2::text[]) r`,
      [names, everyStream, seededAt],
    );
    if (HISTORY_DAYS > 0) {
      // The runs of the days before, as pmsync.runs keeps them (every run, never purged): the busy streams checked
      // every half hour in opening hours, the others nightly. The decider's reads of the last hours must not grow
      // with them.
      for (let d = HISTORY_DAYS; d >= 1; d--) {
        const day = dayStart - d * 24 * HOUR;
        await seed.query(
          `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, started_at, ended_at, window_start, window_end, pages, requests, updated)
           SELECT s, r, 'incremental', 'check', 'succeeded', t, t, t - interval '30 min' - make_interval(secs => $5::float8 / 1000),
                  t - make_interval(secs => $5::float8 / 1000), 1, 1, (extract(epoch FROM t)::bigint / 60 + length(s)) % 4
           FROM unnest($1::text[]) s, unnest($2::text[]) r,
                generate_series($3::timestamptz + interval '8 hours', $3::timestamptz + interval '19 hours', interval '30 min') t
           WHERE r = ANY($4::text[])
           UNION ALL
           SELECT s, r, 'incremental', 'check', 'succeeded', t, t, t - interval '1 day', t - make_interval(secs => $5::float8 / 1000), 1, 1, 0
           FROM unnest($1::text[]) s, unnest($2::text[]) r, (SELECT $3::timestamptz + interval '3 hours' AS t) n
           WHERE NOT r = ANY($4::text[])`,
          [names, everyStream, new Date(day), busy, LAG_MS],
        );
      }
    }
    if (WEBHOOKS) {
      await seed.query(
        `INSERT INTO pmsync.webhook_secrets (source, token_hash, created_at, activated_at) SELECT s, 'h-' || s, $2, $2 FROM unnest($1::text[]) s`,
        [names, seededAt],
      );
    }
  } finally {
    await seed.query("SET session_replication_role = 'origin'");
    seed.release();
  }
  await db.pool.query('ANALYZE');

  let now = dayStart + FROM_HOUR * HOUR;
  const end = dayStart + TO_HOUR * HOUR;
  const pool = createPool(db.url, 5);
  const ledgers = new Map(config.sources.map((s) => [s.name, new QuotaLedger(pool, quotaSettingsFor(s), () => new Date(now))]));
  const keyOf = new Map(config.sources.map((s) => [s.name, quotaSettingsFor(s).keyId]));
  const indexOf = new Map(names.map((n, i) => [n, i]));
  const lastCheck = new Map<string, number>();
  const pending: RunJob[] = [];
  const inFlight = new Set<string>();
  const scheduler = new Scheduler({
    pool,
    logger: pino({ level: 'silent' }),
    now: () => new Date(now),
    holder: 'decider-bench',
    config,
    catalog: streamCatalog,
    ledgerFor: (s) => ledgers.get(s.name)!,
    dispatcher: {
      async dispatch(job) {
        pending.push(job);
        inFlight.add(`${job.source}/${job.resource}`);
        return true;
      },
      async inFlight() {
        return new Set(inFlight);
      },
    },
    planEveryTick: EVERY_TICK,
  });
  let stats: DecideStats | null = null;
  scheduler.onDecide = (s) => (stats = s);

  /** The runs dispatched at the last tick end now, written as a run writes them. */
  async function completeRuns(): Promise<void> {
    if (pending.length === 0) return;
    const jobs = pending.splice(0);
    const rows = jobs.map((j) => {
      const key = `${j.source}/${j.resource}`;
      const fired = Date.parse(j.firedAt);
      const from = (lastCheck.get(key) ?? dayStart - 10 * MINUTE) - LAG_MS;
      const found = changesIn(j.resource, indexOf.get(j.source)!, from, fired - LAG_MS);
      lastCheck.set(key, fired);
      return { ...j, fired, from, found, slot: slotOf(fired - LAG_MS, ZONE) };
    });
    const at = new Date(now);
    await pool.query(
      `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, started_at, ended_at, window_start, window_end, pages, requests, updated)
       SELECT s, r, CASE WHEN p = 'full' THEN 'full' ELSE 'incremental' END, p, 'succeeded', f, $6, w, f - make_interval(secs => $7::float8 / 1000), 1, 1, n
       FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $8::int[]) AS x(s, r, p, f, w, n)`,
      [
        rows.map((r) => r.source),
        rows.map((r) => r.resource),
        rows.map((r) => r.purpose),
        rows.map((r) => new Date(r.fired)),
        rows.map((r) => new Date(r.from)),
        at,
        LAG_MS,
        rows.map((r) => r.found),
      ],
    );
    await pool.query(
      `UPDATE pmsync.stream_schedule s SET last_done_at = $4, last_outcome = 'succeeded', last_check_at = x.f, updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(src, r, f) WHERE s.source = x.src AND s.resource = x.r`,
      [rows.map((r) => r.source), rows.map((r) => r.resource), rows.map((r) => new Date(r.fired)), at],
    );
    await pool.query(
      `UPDATE pmsync.sync_state s SET cursor = x.f - make_interval(secs => $4::float8 / 1000), updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(src, r, f) WHERE s.source = x.src AND s.resource = x.r`,
      [rows.map((r) => r.source), rows.map((r) => r.resource), rows.map((r) => new Date(r.fired)), LAG_MS],
    );
    const keys = rows.map((r) => keyOf.get(r.source)!);
    const day = quotaDayOf(at, ledgers.get(rows[0]!.source)!.settings).day;
    await pool.query(
      `INSERT INTO pmsync.quota_usage AS u (key_id, quota_day, used, used_check, daily_limit, budget, updated_at)
       SELECT k, $2::date, count(*), count(*), 1000, 150, $3 FROM unnest($1::text[]) k GROUP BY k
       ON CONFLICT (key_id, quota_day) DO UPDATE SET used = u.used + excluded.used, used_check = u.used_check + excluded.used_check, updated_at = $3`,
      [keys, day, at],
    );
    const modelled = rows.filter(
      (r) => r.resource !== 'giftcertificates' && r.resource !== 'companies' && r.resource !== 'membershipprograms',
    );
    await pool.query(
      `UPDATE pmsync.change_model m SET changes = m.changes + x.n, exposure_hours = m.exposure_hours + x.h, as_of = $6
       FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::float8[]) AS x(src, r, slot, n, h)
       WHERE m.source = x.src AND m.resource = x.r AND m.slot = x.slot`,
      [
        modelled.map((r) => r.source),
        modelled.map((r) => r.resource),
        modelled.map((r) => r.slot),
        modelled.map((r) => r.found),
        modelled.map((r) => (r.fired - r.from) / HOUR),
        at,
      ],
    );
    for (const j of jobs) inFlight.delete(`${j.source}/${j.resource}`);
  }

  /** The busy streams' changes in (from, to], notified as the receiver records them. */
  async function notify(from: number, to: number): Promise<void> {
    const src: string[] = [];
    const res: string[] = [];
    const ids: string[] = [];
    const ats: Date[] = [];
    for (const resource of busy) {
      const list = changeTimes.get(resource)!;
      names.forEach((name, i) => {
        const shift = shiftOf(i);
        for (const t of list) {
          const at = t + shift;
          if (at > from && at <= to) {
            src.push(name);
            res.push(resource);
            ids.push(`${name}-${resource}-${at}`);
            ats.push(new Date(at));
          }
        }
      });
    }
    if (src.length === 0) return;
    await pool.query(
      `INSERT INTO pmsync.webhook_events (source, event_id, event_type, tenant_id, application, event_timestamp, url, resource, outcome, received_at, last_received_at)
       SELECT s, e, 'Appointment.Updated', 't', 'a', t, 'u', r, 'notified', t, t FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS x(s, r, e, t)`,
      [src, res, ids, ats],
    );
  }

  log(`deciding ${EVERY_TICK ? 'every source at every tick' : 'on change'}, ${FROM_HOUR}:00-${TO_HOUR}:00, a tick every ${TICK / 1000} s`);
  const ticks: Array<{ at: number; cpuMs: number; wallMs: number; stats: DecideStats }> = [];
  // Garbage collection's pauses in the process (the harness's included), hour by hour: what a growing heap costs.
  let gcMs = 0;
  const gcSeen = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration;
  });
  gcSeen.observe({ entryTypes: ['gc'] });
  let gcMsAtHour = 0;
  let dispatched = 0;
  const dispatchLines: string[] = [];
  while (now < end) {
    await completeRuns();
    if (WEBHOOKS) await notify(now - TICK, now);
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const jobs = await scheduler.tick();
    const wallMs = performance.now() - t0;
    const used = process.cpuUsage(cpu);
    dispatched += jobs.length;
    if (DISPATCHES)
      for (const j of jobs) dispatchLines.push(`${j.firedAt} ${j.source} ${j.resource} ${j.purpose} ${j.reason} ${j.mustInclude ?? '-'}`);
    ticks.push({ at: now, cpuMs: (used.user + used.system) / 1000, wallMs, stats: stats! });
    if (ticks.length % Math.round(HOUR / TICK) === 0) {
      const hour = ticks.slice(-Math.round(HOUR / TICK));
      // Plans as the tables count them: sources planned, less those whose search resumed, plus probes.
      const plans = hour.reduce((n, t) => n + t.stats.planned - t.stats.resumed + t.stats.probes, 0);
      const hourDispatched = hour.reduce((n, t) => n + t.stats.dispatched, 0);
      log(
        `${new Date(now).toISOString().slice(11, 16)}Z: this hour ${fmtNum(hour.reduce((n, t) => n + t.cpuMs, 0) / 1000)} s CPU, ` +
          `wall p95 tick ${fmtNum(
            percentile(
              hour.map((t) => t.wallMs),
              95,
            ),
          )} ms, ${fmtInt(hourDispatched)} dispatched, ${fmtInt(plans)} plans` +
          `${hourDispatched > 0 ? ` (${fmtNum(plans / hourDispatched)} a dispatch)` : ''}; ${fmtInt(dispatched)} dispatched so far; ` +
          `GC pauses ${fmtNum((gcMs - gcMsAtHour) / 1000)} s, heap ${fmtInt(process.memoryUsage().heapUsed / 2 ** 20)} MiB`,
      );
      gcMsAtHour = gcMs;
    }
    now += TICK;
  }
  // What the decider holds at the end of the day: the heap after a full collection, when node runs with --expose-gc.
  const collect = (globalThis as { gc?: () => void }).gc;
  collect?.();
  const heapAtEnd = process.memoryUsage().heapUsed;
  await pool.end();
  gcSeen.disconnect();
  // Sorted: within a tick, the order sources are decided in is the order their reads come back.
  if (DISPATCHES)
    writeFileSync(
      DISPATCHES,
      dispatchLines
        .sort()
        .map((l) => `${l}\n`)
        .join(''),
    );

  const local = (t: number) => new Date(t - 5 * HOUR).getUTCHours();
  const busyTicks = ticks.filter((t) => local(t.at) >= BUSY_FROM && local(t.at) < BUSY_TO);
  const sum = (list: typeof ticks, f: (t: (typeof ticks)[number]) => number) => list.reduce((n, t) => n + f(t), 0);
  // Plans made at a tick: the sources planned there (a plan the wake handed over included), less those whose search
  // resumed without a plan at the tick, and the wakes' probes.
  const plansOf = (t: (typeof ticks)[number]) => t.stats.planned - t.stats.resumed + t.stats.probes;
  const describe = (label: string, list: typeof ticks) => [
    label,
    fmtInt(list.length),
    fmtNum(sum(list, (t) => t.cpuMs) / 1000),
    `${fmtNum(
      percentile(
        list.map((t) => t.cpuMs),
        50,
      ),
    )} / ${fmtNum(
      percentile(
        list.map((t) => t.cpuMs),
        95,
      ),
    )} / ${fmtNum(
      percentile(
        list.map((t) => t.cpuMs),
        100,
      ),
    )}`,
    `${fmtNum(
      percentile(
        list.map((t) => t.wallMs),
        50,
      ),
    )} / ${fmtNum(
      percentile(
        list.map((t) => t.wallMs),
        95,
      ),
    )} / ${fmtNum(
      percentile(
        list.map((t) => t.wallMs),
        100,
      ),
    )}`,
    fmtNum(sum(list, (t) => t.stats.read) / list.length),
    fmtNum(sum(list, (t) => t.stats.readInPart) / list.length),
    fmtNum(sum(list, (t) => t.stats.planned - t.stats.resumed) / list.length),
    fmtNum(sum(list, (t) => t.stats.resumed) / list.length),
    fmtNum(sum(list, (t) => t.stats.probes) / list.length),
    fmtNum(
      sum(list, (t) => plansOf(t)) /
        Math.max(
          1,
          sum(list, (t) => t.stats.dispatched),
        ),
    ),
  ];
  // CPU per tick against the sources planned at it: what deciding costs grows with what changed.
  const buckets = [0, 1, 10, 100, 1000, 10_000, Number.POSITIVE_INFINITY];
  const byPlanned = buckets.slice(0, -1).map((lo, i) => {
    const hi = buckets[i + 1]!;
    const list = ticks.filter((t) => plansOf(t) >= lo && plansOf(t) < hi);
    return [
      `${fmtInt(lo)}-${Number.isFinite(hi) ? fmtInt(hi - 1) : 'more'}`,
      fmtInt(list.length),
      list.length ? fmtNum(sum(list, (t) => t.cpuMs) / list.length) : '-',
      sum(list, (t) => plansOf(t)) > 0 ? fmtNum(sum(list, (t) => t.cpuMs) / sum(list, (t) => plansOf(t))) : '-',
    ];
  });
  const command = `node bench/decider.ts ${process.argv.slice(2).join(' ')}`.trim();
  process.stdout.write(
    [
      `## The decider over ${fmtInt(SOURCES)} sources (${EVERY_TICK ? 'every source planned at every tick' : 'planned on change'})`,
      '',
      `- Command: \`${command}\``,
      `- Date: ${new Date().toISOString()}; machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at the end`,
      `- PostgreSQL: ${server.label}; ${fmtInt(SOURCES)} sources x ${catalog.length} streams${HISTORY_DAYS > 0 ? ` with ${HISTORY_DAYS} days of runs stored before` : ''}, the reference day ${FROM_HOUR}:00-${TO_HOUR}:00 local, a tick every ${TICK / 1000} s${WEBHOOKS ? ', the busy streams notified by webhooks' : ', no webhooks'}`,
      `- Dispatched: ${fmtInt(dispatched)} runs (${fmtNum(dispatched / SOURCES)} a source); wall time ${fmtNum((performance.now() - started) / 60_000)} min`,
      `- Memory: peak RSS ${fmtInt(process.resourceUsage().maxRSS / 1024)} MiB; heap at the end ${fmtInt(heapAtEnd / 2 ** 20)} MiB${collect ? ' after a full collection' : ' (run node with --expose-gc for it after a full collection)'}`,
      '',
      table(
        [
          'ticks',
          'count',
          'decider CPU s',
          'CPU ms per tick p50 / p95 / max',
          'wall ms per tick p50 / p95 / max',
          'sources read a tick',
          'of them in part',
          'planned a tick',
          'resumed a tick',
          'probes a tick',
          'plans a dispatch',
        ],
        [describe(`busy hours ${BUSY_FROM}-${BUSY_TO}`, busyTicks), describe('all played', ticks)],
      ),
      '',
      'CPU per tick by the plans it made (sources planned, less those resumed, plus probes):',
      '',
      table(['plans at the tick', 'ticks', 'CPU ms a tick', 'CPU ms a plan'], byPlanned),
      '',
    ].join('\n'),
  );
} finally {
  await db.drop();
  await server.stop();
}
