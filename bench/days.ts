/**
 * Held-out days: the budget scheduler judged on days it did not learn from
 * (bench/support/held-out.ts), next to three baselines at matched requests.
 * Each scenario plays one scored day on an injected clock through the real
 * scheduler, run queue, webhook receiver and simulator
 * (bench/support/day-rig.ts), after the day's history has been played at the
 * source for the change model to learn from. Requests are the simulator's own
 * count for the practice's key on the scored quota day.
 *
 *   npm run bench:days                  quick: 3 days, 3 policies, a decision every simulated minute
 *   npm run bench:days -- --full        every day, every policy and the cost curves, a decision every 30 s
 *   npm run bench:days -- --days evening,products-burst --tick-seconds 60
 *   npm run bench:days -- --days evening --trace memberships,orders   every dispatch of those streams (or "all")
 *   npm run bench:days -- --budget-only        the budget policies alone, no baselines or curves
 *   npm run bench:days -- --budget-only --budgets 150,600 --webhooks off   those budgets, without webhooks only
 *   npm run bench:days -- --seed 8             another draw of the same days (the changes' instants and the rig's chance)
 *   npm run bench:days -- --hours "Mon-Sat 08:00-19:00"   the budget policies told the practice's hours, as (a) is
 *
 * Policies: budget 150 with and without webhooks, and the baselines, each
 * through the real scheduler with pinned crons (schedules.overrides):
 * (a) busy streams every N minutes in opening hours, the rest nightly;
 * (b) every stream on one plain cron; (c) every stream nightly plus a check of
 * a notified stream N minutes after its first waiting notification
 * (bench/support/webhook-trigger.ts). N is chosen per day so a baseline's
 * requests are at least the budget policy's (without webhooks for (a) and
 * (b), with webhooks for (c)): the cheapest setting predicted to reach them
 * is played, and the next one if it fell short.
 *
 * Staleness counts unread changes: one never read by local midnight is stale
 * until then. The report goes to stdout and bench/out/days-<mode>-<time>.md,
 * the raw figures to the .json beside it, with the target verdicts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Purpose } from '../src/api/http.ts';
import { parseHours } from '../src/config/hours.ts';
import { createBenchDatabase, startBenchServer, type BenchServer } from './support/db.ts';
import { CANDIDATES, policyName, predict, rigOptions, SIZES, type Baseline, type Policy } from './support/baselines.ts';
import { DayRig, HOUR, localMidnight } from './support/day-rig.ts';
import { BUSY, HELD_OUT_DAYS, scoredChanges, stalenessWithUnread, ZONE, type HeldOutDay, type Staleness } from './support/held-out.ts';
import { ROOT } from './support/proc.ts';
import { fmtInt, fmtNum, table } from './support/stats.ts';
import { WebhookTrigger } from './support/webhook-trigger.ts';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    full: { type: 'boolean', default: false },
    days: { type: 'string' },
    'tick-seconds': { type: 'string' },
    trace: { type: 'string' },
    'budget-only': { type: 'boolean', default: false },
    budgets: { type: 'string' },
    webhooks: { type: 'string' },
    seed: { type: 'string' },
    hours: { type: 'string' },
  },
});
/** Streams whose every dispatch (time, purpose, reason) is printed to stderr, for reading a day's decisions. */
const TRACE = new Set(
  (values.trace ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const FULL = values.full === true;
const MODE = FULL ? 'full' : 'quick';
const QUICK_DAYS = ['reference', 'evening', 'products-burst'];
const dayKeys = values.days ? values.days.split(',').map((s) => s.trim()) : FULL ? HELD_OUT_DAYS.map((d) => d.key) : QUICK_DAYS;
for (const k of dayKeys) {
  if (!HELD_OUT_DAYS.some((d) => d.key === k)) {
    process.stderr.write(`--days: unknown day "${k}"; days: ${HELD_OUT_DAYS.map((d) => d.key).join(', ')}\n`);
    process.exit(2);
  }
}
const TICK = Number(values['tick-seconds'] ?? (FULL ? 30 : 60));
if (!Number.isInteger(TICK) || TICK < 1 || TICK > 600) {
  process.stderr.write(`--tick-seconds: "${values['tick-seconds']}" is not a whole number of seconds from 1 to 600\n`);
  process.exit(2);
}

const BUDGET = 150;
/** Budgets of the budget policies played (--budgets; baselines are matched against BUDGET's). */
const BUDGETS = (values.budgets ?? String(BUDGET)).split(',').map((b) => Number(b.trim()));
if (BUDGETS.some((b) => !Number.isInteger(b) || b < 1)) {
  process.stderr.write(`--budgets: "${values.budgets}" is not a list of whole numbers of requests, such as 150,600\n`);
  process.exit(2);
}
const HOOKS = values.webhooks ?? 'both';
if (!['on', 'off', 'both'].includes(HOOKS)) {
  process.stderr.write(`--webhooks: "${HOOKS}" is not one of on, off, both\n`);
  process.exit(2);
}
/** The scored day's changes and the rig's randomness; 7 unless --seed (another draw of the same days). */
const SEED = Number(values.seed ?? 7);
if (!Number.isInteger(SEED) || SEED < 1) {
  process.stderr.write(`--seed: "${values.seed}" is not a positive whole number\n`);
  process.exit(2);
}

/** The practice's opening hours stated to pmsync (--hours "Mon-Sat 08:00-19:00"; entries split by ";"), as the cron (a) is told them. */
const HOURS = values.hours ? values.hours.split(';').map((h) => h.trim()) : undefined;
if (HOURS) {
  const { problems } = parseHours(HOURS);
  if (problems.length > 0) {
    process.stderr.write(`--hours: ${problems.join('; ')}\n`);
    process.exit(2);
  }
}
const budgetPolicy = (budget: number, webhooks: boolean): Policy => ({
  kind: 'budget',
  budget,
  webhooks,
  ...(HOURS ? { hours: HOURS } : {}),
});

interface Result {
  day: string;
  policy: string;
  kind: Policy['kind'];
  setting: number;
  requests: number;
  ledgerTotal: number;
  byPurpose: Record<Purpose, number>;
  byStream: Record<string, number>;
  busy: Staleness;
  /** Every stream's changes pooled: the quiet streams' waits (and those left unread) count too. */
  every: Staleness;
  streams: Record<string, Staleness>;
  burst: Staleness | null;
  /** Budget policies: budget not spent by midnight while some change waited unread (0 when none waited). */
  unspentWhileUnread: number | null;
  /** Local time of the request that used up the budget, when it was. */
  budgetSpentAt: string | null;
  triggerChecks: number | null;
  seconds: number;
}

interface Matched {
  day: string;
  baseline: Baseline;
  against: string;
  target: number;
  tried: Array<{ setting: number; predicted: number; requests: number }>;
  result: Result;
}

const log = (line: string) => process.stderr.write(`[days ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const localTime = (ms: number) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(ms);

async function play(server: BenchServer, day: HeldOutDay, p: Policy): Promise<Result> {
  const started = performance.now();
  const db = await createBenchDatabase(server, { migrate: false });
  const rig = await DayRig.start({
    databaseUrl: db.url,
    date: day.date,
    timeZone: ZONE,
    sizes: SIZES,
    history: day.history === 'none' ? [] : day.history,
    tickSeconds: TICK,
    seed: SEED,
    webhooks: false,
    ...rigOptions(p),
  });
  let trigger: WebhookTrigger | null = null;
  let result: Result;
  try {
    await rig.prepare();
    if (p.kind === 'cron+webhooks') {
      trigger = await WebhookTrigger.start(rig, p.every);
      rig.extraRuns = trigger.runs;
    }
    const report = await rig.playDay(scoredChanges(day, SEED));
    for (const job of report.dispatches) {
      if (TRACE.has(job.resource) || TRACE.has('all'))
        log(`  ${day.key}: ${policyName(p)}: ${localTime(Date.parse(job.firedAt))} ${job.resource} ${job.purpose} (${job.reason})`);
    }
    const streams: Record<string, Staleness> = {};
    for (const resource of new Set(report.changes.map((c) => c.resource)))
      streams[resource] = stalenessWithUnread(report.changes, rig.dayEnd, (c) => c.resource === resource);
    const unread = report.changes.some((c) => c.visibleAt === null);
    const budget = p.kind === 'budget' ? p.budget : null;
    result = {
      day: day.key,
      policy: policyName(p),
      kind: p.kind,
      setting: p.kind === 'budget' ? p.budget : p.every,
      requests: report.requests,
      ledgerTotal: report.ledger.used,
      byPurpose: report.ledger.byPurpose,
      byStream: report.requestsByStream,
      busy: stalenessWithUnread(report.changes, rig.dayEnd, (c) => (BUSY as readonly string[]).includes(c.resource)),
      every: stalenessWithUnread(report.changes, rig.dayEnd, () => true),
      streams,
      // The burst stream's changes, the usual day's few among them.
      burst: day.burst ? (streams[day.burst.resource] ?? null) : null,
      unspentWhileUnread: budget === null ? null : unread ? Math.max(0, budget - report.requests) : 0,
      budgetSpentAt: budget !== null && report.requestTimes.length >= budget ? localTime(report.requestTimes[budget - 1]!) : null,
      triggerChecks: trigger ? trigger.checks : null,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await trigger?.close();
    await rig.close();
    await db.drop();
  }
  log(
    `${day.key}: ${result.policy}: ${result.requests} requests, busy unread ${result.busy.unread}/${result.busy.changes}, ` +
      `p95 ${fmtNum(result.busy.p95)} min${result.burst ? `, burst max ${fmtNum(result.burst.max)} min` : ''}, ` +
      `every stream unread ${result.every.unread}/${result.every.changes} (${result.seconds.toFixed(0)} s)`,
  );
  return result;
}

/** Plays the cheapest setting of a baseline predicted to reach `target` requests, and tighter ones while it fell short. */
async function matched(server: BenchServer, day: HeldOutDay, kind: Baseline, against: Result): Promise<Matched> {
  const changes = scoredChanges(day, SEED);
  const { from, to } = dayBounds(day);
  const options = CANDIDATES[kind]
    .map((every) => ({ every, predicted: predict({ kind, every }, changes, from, to, TICK * 1000) }))
    .sort((a, b) => a.predicted - b.predicted || b.every - a.every);
  let i = options.findIndex((o) => o.predicted >= against.requests);
  if (i < 0) i = options.length - 1;
  const tried: Matched['tried'] = [];
  let result: Result;
  for (;;) {
    result = await play(server, day, { kind, every: options[i]!.every });
    tried.push({ setting: options[i]!.every, predicted: options[i]!.predicted, requests: result.requests });
    if (result.requests >= against.requests || i === options.length - 1 || tried.length === 3) break;
    i++;
  }
  return { day: day.key, baseline: kind, against: against.policy, target: against.requests, tried, result };
}

function dayBounds(day: HeldOutDay): { from: number; to: number } {
  const from = localMidnight(day.date, ZONE);
  const next = new Intl.DateTimeFormat('en-CA', { timeZone: ZONE }).format(from + 26 * HOUR);
  return { from, to: localMidnight(next, ZONE) };
}

interface Verdict {
  day: string;
  target: string;
  policy: string;
  measured: string;
  holds: boolean;
}

function verdicts(day: HeldOutDay, results: Result[], crons: Result[]): Verdict[] {
  const out: Verdict[] = [];
  const withHooks = results.find((r) => r.policy === policyName(budgetPolicy(BUDGET, true)));
  const without = results.find((r) => r.policy === policyName(budgetPolicy(BUDGET, false)));
  const v = (target: string, r: Result, measured: string, holds: boolean) =>
    out.push({ day: day.key, target, policy: r.policy, measured, holds });
  if (withHooks) {
    v(
      'with webhooks: 0 busy unread, busy p95 <= 15 min, requests <= 150',
      withHooks,
      `${withHooks.busy.unread} unread, p95 ${fmtNum(withHooks.busy.p95)} min, ${withHooks.requests} requests`,
      withHooks.busy.unread === 0 && !(withHooks.busy.p95 > 15) && withHooks.requests <= BUDGET,
    );
  }
  if (without) {
    const rivals = crons.filter((c) => c.requests >= without.requests && Number.isFinite(c.busy.p95));
    const best = rivals.sort((a, b) => a.busy.p95 - b.busy.p95)[0];
    v(
      'without webhooks: 0 busy unread, p95 no worse than the best cron at >= its requests',
      without,
      `${without.busy.unread} unread, p95 ${fmtNum(without.busy.p95)} min, ${without.requests} requests; ` +
        (best ? `best cron ${best.policy}: p95 ${fmtNum(best.busy.p95)} min at ${best.requests}` : 'no cron at >= its requests'),
      without.busy.unread === 0 && (best ? !(without.busy.p95 > best.busy.p95) : true),
    );
  }
  if (day.burst) {
    for (const r of [withHooks, without]) {
      if (!r?.burst) continue;
      v(
        `${day.burst.resource} burst read within 4 h`,
        r,
        `${r.burst.unread} of ${r.burst.changes} unread at midnight, max ${fmtNum(r.burst.max)} min`,
        r.burst.unread === 0 && r.burst.max <= 240,
      );
    }
  }
  if (day.key === 'no-changes') {
    for (const r of [withHooks, without]) if (r) v('no changes: <= 50 requests', r, `${r.requests} requests`, r.requests <= 50);
  }
  if (day.key === 'reference' && withHooks) {
    v(
      'reference day: <= 150 requests at busy p95 <= 10 min',
      withHooks,
      `${withHooks.requests} requests, p95 ${fmtNum(withHooks.busy.p95)} min`,
      withHooks.requests <= BUDGET && !(withHooks.busy.p95 > 10),
    );
  }
  return out;
}

const f = (n: number) => fmtNum(n);
const staleCell = (s: Staleness | null) => (s ? `${f(s.p50)} / ${f(s.p95)} / ${f(s.max)}${s.unread ? ` (${s.unread} unread)` : ''}` : '-');

function report(days: HeldOutDay[], results: Result[], matches: Matched[], curves: Result[], checks: Verdict[]): string {
  const lines: string[] = [];
  lines.push(
    `Each day is scored after its history (28 days of the reference pattern, 8-19, Sundays closed, unless said otherwise) in ${ZONE}; ` +
      `budget ${BUDGET}; the scheduler decides every ${TICK} s of simulated time. Staleness in minutes counts a change never read ` +
      'as stale until local midnight; "busy" pools appointments, customers and orders, "every stream" all of them.',
    '',
    'Days: ' + days.map((d) => `**${d.key}**: ${d.name}`).join('; ') + '.',
    '',
    table(
      [
        'day',
        'policy',
        'requests (simulator)',
        'busy unread at midnight',
        'busy p50 / p95 / max incl. unread',
        'budget unspent while changes unread',
        'budget spent at',
        'burst stream p50 / p95 / max',
        'every stream p50 / p95 / max incl. unread',
      ],
      results.map((r) => [
        r.day,
        r.policy,
        fmtInt(r.requests),
        `${r.busy.unread} of ${r.busy.changes}`,
        r.busy.changes ? `${f(r.busy.p50)} / ${f(r.busy.p95)} / ${f(r.busy.max)}` : '-',
        r.unspentWhileUnread === null ? 'n/a' : String(r.unspentWhileUnread),
        r.budgetSpentAt ?? '-',
        staleCell(r.burst),
        r.every.changes ? staleCell(r.every) : '-',
      ]),
    ),
    '',
    'Baselines at matched requests: the setting played is the cheapest predicted to reach the budget policy’s requests ' +
      '(without webhooks for (a) and (b), with webhooks for (c)), then tighter ones while it fell short (at most 3):',
    '',
    table(
      ['day', 'baseline', 'matched against', 'settings tried (N: predicted -> requests)', 'requests >= target'],
      matches.map((m) => [
        m.day,
        m.result.policy,
        `${m.against}: ${m.target}`,
        m.tried.map((t) => `${t.setting}: ${t.predicted} -> ${t.requests}`).join('; '),
        m.result.requests >= m.target ? 'yes' : `no (${m.result.requests}: no setting reaches it)`,
      ]),
    ),
    '',
    'Staleness per stream, p50 / p95 / max incl. unread:',
    '',
    table(
      ['day', 'policy', 'appointments', 'customers', 'orders', 'memberships'],
      results.map((r) => [
        r.day,
        r.policy,
        ...['appointments', 'customers', 'orders', 'memberships'].map((x) => staleCell(r.streams[x] ?? null)),
      ]),
    ),
    '',
    'Requests by purpose (pmsync ledger, which must agree with the simulator in total) and by stream (simulator):',
    '',
    table(
      ['day', 'policy', 'ledger total', 'by purpose', 'by stream'],
      results.map((r) => [
        r.day,
        r.policy,
        fmtInt(r.ledgerTotal),
        (['check', 'webhook', 'full', 'backfill'] as const).map((p) => `${p} ${r.byPurpose[p]}`).join(', '),
        Object.entries(r.byStream)
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k} ${n}`)
          .join(', '),
      ]),
    ),
  );
  if (curves.length > 0) {
    lines.push(
      '',
      'Cost curve, no webhooks: requests against busy p95 incl. unread:',
      '',
      table(
        ['day', 'policy', 'requests', 'busy unread', 'busy p95', 'busy p50'],
        curves.map((r) => [r.day, r.policy, fmtInt(r.requests), String(r.busy.unread), f(r.busy.p95), f(r.busy.p50)]),
      ),
    );
  }
  lines.push(
    '',
    'Targets of issue 21 at the default budget:',
    '',
    table(
      ['day', 'target', 'policy', 'measured', 'holds'],
      checks.map((c) => [c.day, c.target, c.policy, c.measured, c.holds ? 'yes' : '**no**']),
    ),
  );
  return lines.join('\n');
}

const started = performance.now();
const server = await startBenchServer();
log(`PostgreSQL: ${server.label}; ${MODE}, days ${dayKeys.join(', ')}, tick ${TICK} s`);
const days = HELD_OUT_DAYS.filter((d) => dayKeys.includes(d.key));
const played: HeldOutDay[] = [];
const results: Result[] = [];
const matches: Matched[] = [];
const curves: Result[] = [];
const checks: Verdict[] = [];
const baselines: Baseline[] = values['budget-only'] ? [] : FULL ? ['hours-cron', 'cron', 'cron+webhooks'] : ['cron'];
const command = `npm run bench:days${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
const outDir = join(ROOT, 'bench', 'out');
const stamp = new Date().toISOString().replace(/[:.]/g, '-');

/** Writes the report of the days played so far (after each day: a long run keeps what it measured). */
function save(): string {
  const header = [
    `# Held-out days (${MODE})`,
    '',
    `- Command: \`${command}\``,
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at the end`,
    `- PostgreSQL: ${server.label}`,
    `- Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s; days played: ${played.length} of ${days.length}`,
    '',
  ].join('\n');
  const markdown = `${header}\n${report(played, results, matches, curves, checks)}\n`;
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, `days-${MODE}-${stamp}.md`), markdown);
  writeFileSync(
    join(outDir, `days-${MODE}-${stamp}.json`),
    JSON.stringify(
      { mode: MODE, command, tickSeconds: TICK, budget: BUDGET, days: played, results, matches, curves, targets: checks },
      null,
      2,
    ),
  );
  return markdown;
}

try {
  for (const day of days) {
    const dayResults: Result[] = [];
    for (const budget of BUDGETS) {
      if (HOOKS !== 'off') dayResults.push(await play(server, day, budgetPolicy(budget, true)));
      if (HOOKS !== 'on') dayResults.push(await play(server, day, budgetPolicy(budget, false)));
    }
    const withHooks = dayResults.find((r) => r.policy === policyName(budgetPolicy(BUDGET, true)));
    const without = dayResults.find((r) => r.policy === policyName(budgetPolicy(BUDGET, false)));
    for (const kind of baselines) {
      const against = kind === 'cron+webhooks' ? withHooks : without;
      if (!against) continue;
      const m = await matched(server, day, kind, against);
      matches.push(m);
      dayResults.push(m.result);
    }
    const dayCurve: Result[] = [];
    if (FULL && !values['budget-only'] && (day.key === 'reference' || day.key === 'evening')) {
      for (const budget of [50, 100, 300, 600, 900]) dayCurve.push(await play(server, day, budgetPolicy(budget, false)));
      for (const every of [240, 120, 60, 30, 15]) dayCurve.push(await play(server, day, { kind: 'cron', every }));
      curves.push(...[...(without ? [without] : []), ...dayCurve].sort((a, b) => a.requests - b.requests));
    }
    results.push(...dayResults);
    const crons = [...dayResults, ...dayCurve].filter((r) => r.kind === 'cron' || r.kind === 'hours-cron');
    checks.push(...verdicts(day, dayResults, crons));
    played.push(day);
    save();
  }
} finally {
  await server.stop();
}
process.stdout.write(save());
log(`report written to bench/out/days-${MODE}-${stamp}.md`);
