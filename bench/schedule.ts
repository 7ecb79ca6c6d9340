/**
 * Scheduling: what a practice day costs in requests and what freshness it
 * buys, under today's fixed schedules and under budget mode, with and without
 * webhooks. Each scenario plays the same reference practice day (the
 * simulator's REFERENCE_DAY, after 28 days of the same pattern as history) on
 * an injected clock, through the real scheduler, run queue, webhook receiver
 * and simulator (bench/support/day-rig.ts). Requests are the simulator's own
 * count for the practice's gateway key on that quota day; the split by
 * purpose is pmsync's ledger, which must agree with it in total.
 *
 * Staleness of a change: from the change at the source to the tick whose run
 * wrote its row. The scheduler decides every 30 s of simulated time in the
 * full form and every minute in the quick one (15 s by default in serve).
 * The quick form runs (b), (c) and the quiet day; the full one adds today's
 * defaults (a), a heavier day and the curve.
 */
import type { Purpose } from '../src/api/http.ts';
import { QUIET_DAY, REFERENCE_DAY, type DayPattern } from '../simulator/day.ts';
import { createBenchDatabase, type BenchServer } from './support/db.ts';
import { DayRig, stalenessMinutes, type DayReport, type RigOptions } from './support/day-rig.ts';
import { fmtInt, fmtNum, percentile, table } from './support/stats.ts';
import { SIZES } from './support/baselines.ts';
import { BUSY } from './support/held-out.ts';

/** A Thursday, in the future of the real clock (see bench/support/day-rig.ts). */
const DATE = '2027-11-18';
const ZONE = 'America/New_York';
/** The reference day, with 85 more new records on top of its changes (bookings, patients, sales). */
const HEAVY_DAY: DayPattern = {
  ...REFERENCE_DAY,
  changes: {
    ...REFERENCE_DAY.changes,
    appointments: { total: 330, created: 70 },
    customers: { total: 95, created: 30 },
    orders: { total: 100, created: 85 },
  },
};

interface Scenario {
  name: string;
  options: Partial<RigOptions>;
  day: DayPattern;
  /** The budget the scenario must stay within (null: none set). */
  budget: number | null;
}

export interface ScenarioResult {
  name: string;
  budget: number | null;
  requests: number;
  ledgerTotal: number;
  byPurpose: Record<Purpose, number>;
  byStream: Record<string, number>;
  staleness: Record<string, { n: number; unread: number; p50: number; p95: number; max: number }>;
  /** Pooled over appointments, customers and orders (all in opening hours). */
  busyP50: number;
  busyP95: number;
  streamsChecked: number;
  seconds: number;
}

async function play(server: BenchServer, s: Scenario, tickSeconds: number, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const db = await createBenchDatabase(server, { migrate: false });
  const rig = await DayRig.start({
    databaseUrl: db.url,
    date: DATE,
    timeZone: ZONE,
    sizes: SIZES,
    historyDays: 28,
    historyPattern: REFERENCE_DAY,
    tickSeconds,
    webhooks: false,
    ...s.options,
  });
  let report: DayReport;
  try {
    await rig.prepare();
    report = await rig.playDay(s.day);
  } finally {
    await rig.close();
    await db.drop();
  }
  const staleness: ScenarioResult['staleness'] = {};
  for (const resource of new Set(report.changes.map((c) => c.resource))) {
    const mins = stalenessMinutes(report.changes, (c) => c.resource === resource);
    staleness[resource] = {
      n: report.changes.filter((c) => c.resource === resource).length,
      unread: report.changes.filter((c) => c.resource === resource && c.visibleAt === null).length,
      p50: percentile(mins, 50),
      p95: percentile(mins, 95),
      max: percentile(mins, 100),
    };
  }
  const busy = stalenessMinutes(report.changes, (c) => (BUSY as readonly string[]).includes(c.resource));
  const result: ScenarioResult = {
    name: s.name,
    budget: s.budget,
    requests: report.requests,
    ledgerTotal: report.ledger.used,
    byPurpose: report.ledger.byPurpose,
    byStream: report.requestsByStream,
    staleness,
    busyP50: percentile(busy, 50),
    busyP95: percentile(busy, 95),
    streamsChecked: new Set(report.dispatches.map((d) => d.resource)).size,
    seconds: (performance.now() - started) / 1000,
  };
  log(`schedule: ${s.name}: ${result.requests} requests, busy p95 ${fmtNum(result.busyP95)} min (${result.seconds.toFixed(0)} s)`);
  return result;
}

const budgetMode = (budget: number, webhooks: boolean): Partial<RigOptions> => ({ budget, webhooks });
const fixedCron = (everyMinutes: number, webhooks: boolean): Partial<RigOptions> => ({
  // Today's defaults: every incremental stream on a fixed interval, full refreshes nightly; the
  // budget is raised to the whole allowance so the schedule, not the budget, decides.
  budget: 900,
  webhooks,
  webhookRefresh: 'record',
  schedules: { incremental: `*/${everyMinutes} * * * *`, full: '0 2 * * *' },
});
const hourlyCron = (everyHours: number): Partial<RigOptions> => ({
  budget: 900,
  webhooks: false,
  schedules: { incremental: `0 */${everyHours} * * *`, full: '0 2 * * *' },
});

export async function runSchedule(
  server: BenchServer,
  options: { full: boolean; log: (line: string) => void },
): Promise<{ markdown: string; data: unknown }> {
  const { log } = options;
  // The quick form decides every simulated minute; the full one every 30 s.
  const tick = options.full ? 30 : 60;
  const main: Scenario[] = [
    ...(options.full
      ? [{ name: '(a) fixed */15 + per-record webhook refresh', options: fixedCron(15, true), day: REFERENCE_DAY, budget: null }]
      : []),
    { name: '(b) budget mode, no webhooks', options: budgetMode(150, false), day: REFERENCE_DAY, budget: 150 },
    { name: '(c) budget mode with webhooks', options: budgetMode(150, true), day: REFERENCE_DAY, budget: 150 },
    { name: 'no changes all day, budget mode with webhooks', options: budgetMode(150, true), day: QUIET_DAY, budget: 150 },
  ];
  if (options.full)
    main.push({
      name: 'heavier day (85 more new records), budget mode with webhooks',
      options: budgetMode(150, true),
      day: HEAVY_DAY,
      budget: 150,
    });
  const results: ScenarioResult[] = [];
  for (const s of main) results.push(await play(server, s, tick, log));

  const curve: Array<{ mode: string; setting: string; result: ScenarioResult }> = [];
  if (options.full) {
    for (const budget of [50, 100, 150, 300, 600, 900]) {
      curve.push({
        mode: 'budget',
        setting: `budget ${budget}`,
        result: await play(
          server,
          { name: `(b) budget ${budget}`, options: budgetMode(budget, false), day: REFERENCE_DAY, budget },
          tick,
          log,
        ),
      });
    }
    for (const [setting, opts] of [
      ['every 4 h', hourlyCron(4)],
      ['every 2 h', hourlyCron(2)],
      ['*/60', fixedCron(60, false)],
      ['*/30', fixedCron(30, false)],
      ['*/15', fixedCron(15, false)],
      ['*/10', fixedCron(10, false)],
    ] as const) {
      curve.push({
        mode: 'fixed cron',
        setting,
        result: await play(server, { name: `fixed ${setting}`, options: opts, day: REFERENCE_DAY, budget: null }, tick, log),
      });
    }
  }

  const f = (n: number) => fmtNum(n);
  const purposes = (r: ScenarioResult) =>
    (['check', 'webhook', 'full', 'backfill', 'resync'] as const).map((p) => `${p} ${r.byPurpose[p]}`).join(', ');
  const lines: string[] = [];
  lines.push(
    `Reference practice day (${DATE}, ${ZONE}): open 8-19, ${Object.entries(REFERENCE_DAY.changes)
      .map(([r, c]) => `${c.total} ${r} changes (${c.created} new)`)
      .join(', ')}; 28 days of the same pattern before it (Sundays closed) for the model to learn from. ` +
      `Data: ${Object.entries(SIZES)
        .map(([r, n]) => `${fmtInt(n)} ${r}`)
        .join(', ')}. The scheduler decides every ${tick} s of simulated time (15 s in serve by default).`,
    '',
    table(
      ['scenario', 'requests (simulator)', 'ledger total', 'by purpose (ledger)', 'streams checked', 'busy p95 min', 'within budget'],
      results.map((r) => [
        r.name,
        fmtInt(r.requests),
        fmtInt(r.ledgerTotal),
        purposes(r),
        `${r.streamsChecked}/10`,
        f(r.busyP95),
        r.budget === null ? 'n/a' : r.requests <= r.budget ? 'yes' : `NO (${r.budget})`,
      ]),
    ),
    '',
    'Staleness per change (minutes from the change at the source to its row written), p50 / p95 / max, and changes still unread at the end of the day:',
    '',
    table(
      ['scenario', ...['appointments', 'customers', 'orders', 'memberships'].map((x) => x)],
      results.map((r) => [
        r.name,
        ...['appointments', 'customers', 'orders', 'memberships'].map((x) => {
          const s = r.staleness[x];
          return s ? `${f(s.p50)} / ${f(s.p95)} / ${f(s.max)}${s.unread ? ` (${s.unread} unread)` : ''}` : '-';
        }),
      ]),
    ),
    '',
    'Requests by stream (simulator):',
    '',
    table(
      ['scenario', 'requests by stream'],
      results.map((r) => [
        r.name,
        Object.entries(r.byStream)
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k} ${n}`)
          .join(', '),
      ]),
    ),
  );
  if (curve.length > 0) {
    lines.push(
      '',
      'Requests a day against p95 staleness of appointment, customer and order changes (no webhooks), budget mode and fixed schedules:',
      '',
      table(
        ['mode', 'setting', 'requests', 'p95 min', 'p50 min'],
        curve.map((c) => [c.mode, c.setting, fmtInt(c.result.requests), f(c.result.busyP95), f(c.result.busyP50)]),
      ),
    );
  }
  return { markdown: lines.join('\n'), data: { results, curve } };
}
