/**
 * A fleet over a simulated day: the simulator serves many practices at once
 * (each its own gateway key, 1,000-request quota and the reference day's
 * changes), and several `pmsync serve` replicas, as real processes on one
 * PostgreSQL, keep them all in sync (bench/support/fleet-rig.ts). The same day
 * is played first by a sample of the fleet's practices, each alone on its own
 * replica (`--alone`, spread evenly over the fleet), for comparison: each
 * practice draws its own day, so the fleet's requests and staleness are
 * compared with the same practices' alone, practice by practice. Then, in
 * the fleet's day, one replica is killed (SIGKILL) while it runs work, and
 * the time until that work has resumed and ended elsewhere is measured.
 * After the day every practice is read once more with `pmsync sync` and
 * PostgreSQL is compared with the simulator record by record.
 *
 *   npm run bench:fleet                           500 practices, 3 replicas, a tick every 5 simulated minutes
 *   npm run bench:fleet -- --practices 50 --tick-minutes 10
 *   npm run bench:fleet -- --practices 100 --start defaults   replicas with Node's default heap sizing
 *   npm run bench:fleet -- --alone 20            20 of the practices played alone first (10 by default)
 *
 * BENCH_DATABASE_URL points it at a PostgreSQL; the embedded one otherwise.
 * The report goes to stdout and bench/out/fleet-<timestamp>.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REFERENCE_DAY } from '../simulator/day.ts';
import { POLL_SECONDS, RETRY_DELAY_SECONDS, SUPERVISE_SECONDS } from '../src/scheduler/dispatch.ts';
import { QUEUE_CACHE_SECONDS } from '../src/queue.ts';
import type { CoreResource } from '../simulator/index.ts';
import { createBenchDatabase, startBenchServer, type BenchServer } from './support/db.ts';
import { DAY, HOUR, MINUTE } from './support/day-rig.ts';
import { FleetRig, sourceName, type Replica, type TrackedChange } from './support/fleet-rig.ts';
import { parseStarts, ROOT, STARTS } from './support/proc.ts';
import { fmtInt, fmtMb, fmtNum, percentile, table } from './support/stats.ts';

const { values } = parseArgs({
  options: {
    practices: { type: 'string', default: '500' },
    replicas: { type: 'string', default: '3' },
    'tick-minutes': { type: 'string', default: '5' },
    'kill-at': { type: 'string', default: '10' },
    'no-kill': { type: 'boolean', default: false },
    // How many of the fleet's practices are played alone first, each on its own replica, to compare with.
    alone: { type: 'string', default: '10' },
    // How the replicas are started: bin (as shipped), defaults or old-1g (bench/support/proc.ts).
    start: { type: 'string', default: 'bin' },
  },
});
const PRACTICES = Number(values.practices);
const REPLICAS = Number(values.replicas);
const TICK = Number(values['tick-minutes']) * MINUTE;
const KILL_HOUR = Number(values['kill-at']);
/** The restart's bound with the default heartbeat (src/scheduler/dispatch.ts). */
const RESTART_BOUND_SECONDS = 30 + 2 * SUPERVISE_SECONDS + QUEUE_CACHE_SECONDS + POLL_SECONDS;
const ALONE = Math.min(Number(values.alone), PRACTICES);
if (!(Number.isInteger(ALONE) && ALONE >= 1)) throw new Error(`--alone: "${values.alone}" is not a whole number of practices, 1 or more`);
/** How many of the practices played alone are played at once. */
const ALONE_AT_ONCE = 5;
/** The practices played alone: spread evenly over the fleet, the first included. */
const SAMPLE = Array.from({ length: ALONE }, (_, k) => Math.floor((k * PRACTICES) / ALONE));
const [START = 'bin', ...moreStarts] = parseStarts(values.start);
if (moreStarts.length > 0) throw new Error('--start: one start per run');

/** A small practice: a first pass of about 25 requests, so that 500 of them fit a bench. */
const SIZES: Partial<Record<CoreResource, number>> = {
  companies: 1,
  customers: 300,
  appointments: 900,
  orders: 400,
  memberships: 40,
  membershipprograms: 4,
  giftcertificates: 30,
  products: 20,
  services: 10,
  employees: 6,
};
const DATE = '2027-11-18';
const ZONE = 'America/New_York';
const BUDGET = 150;
const TARGET_MINUTES = 120;
/** The streams given that freshness target (the reference day's busy ones); the others keep the budget's floor. */
const BUSY = ['appointments', 'customers', 'orders'];
const HISTORY_DAYS = 7;

const logLine = (line: string) => process.stderr.write(`[fleet ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface DayResult {
  practices: number;
  /** The fleet-wide index of its first practice (the practice played, when alone). */
  firstPractice: number;
  replicas: number;
  requests: number[];
  rejected: number;
  changes: TrackedChange[];
  firstPassTicks: number;
  schedulerCpuSeconds: number;
  tickWallMs: number[];
  replicaCpuSeconds: number[];
  peakRssBytes: number[];
  /** Per replica, the local time (simulated) at which its RSS last reached a new peak. */
  peakRssAt: string[];
  /** Every rise of a replica's peak RSS: local time, replica, RSS and peak (MB). */
  rssRises: Array<{ at: string; replica: number; rssMb: number; peakMb: number }>;
  kill: {
    atLocal: string;
    replica: number;
    runs: string[];
    /** From the kill until the last of its runs started again elsewhere. */
    restartSeconds: number;
    /** From the kill until no run was left in the fleet. */
    resumeSeconds: number;
    /**
     * The last restarted run's wait, in parts: from the kill until pg-boss failed it (its heartbeat lapsed and a
     * supervision pass saw it), and from when its retry could start (the failure plus the retry delay) until a
     * worker took it. Null when no run restarted.
     */
    failedSeconds: number | null;
    takenSeconds: number | null;
    /** Runs queued and not started across the fleet just after the kill. */
    queuedAtKill: number;
    decidingKilled: boolean;
  } | null;
  compare: { records: number; lost: number; duplicated: number; examples: string[] };
  settleExit: number | null;
  /** `pmsync status --problems --limit 5` at the end of the day: its output and how long it took. */
  status: { seconds: number; output: string };
  seconds: number;
}

async function playDay(server: BenchServer, practices: number, replicas: number, kill: boolean, firstPractice = 0): Promise<DayResult> {
  const started = performance.now();
  const who = practices === 1 ? `${sourceName(firstPractice)} alone` : `${practices} practices`;
  const log = (line: string) => logLine(`${who}: ${line}`);
  const db = await createBenchDatabase(server, { migrate: false, poolSize: 2 });
  const rig = await FleetRig.start({
    databaseUrl: db.url,
    practices,
    replicas,
    firstPractice,
    date: DATE,
    timeZone: ZONE,
    sizes: SIZES,
    historyDays: HISTORY_DAYS,
    historyPattern: REFERENCE_DAY,
    source: { budget: BUDGET },
    schedules: { overrides: BUSY.map((resource) => ({ resource, maxStalenessMinutes: TARGET_MINUTES })) },
    start: START,
  });
  try {
    log(`playing ${HISTORY_DAYS} days of history at the simulator`);
    rig.playHistory();
    rig.setClock(rig.dayStart - 3 * HOUR);
    await rig.startReplicas();
    log(`${replicas} replica${replicas > 1 ? 's' : ''} up; first passes from 21:00 the day before`);
    let firstPassTicks = 0;
    for (let t = rig.dayStart - 3 * HOUR; t < rig.dayStart; t += TICK) {
      rig.setClock(t);
      firstPassTicks++;
      if ((await rig.tick()) === 0 && t > rig.dayStart - 3 * HOUR) break;
    }
    const firstTicks = rig.ticks.length;

    const changes = rig.planDay(REFERENCE_DAY);
    log(`the day: ${fmtInt(changes.length)} changes`);
    const tracked: TrackedChange[] = [];
    let pending: TrackedChange[] = [];
    let next = 0;
    let killed: DayResult['kill'] = null;
    const killAt = rig.dayStart + KILL_HOUR * HOUR;
    for (let t = rig.dayStart; t < rig.dayStart + DAY; t += TICK) {
      while (next < changes.length && changes[next]!.at <= t) {
        const c = rig.apply(changes[next++]!);
        tracked.push(c);
        pending.push(c);
      }
      rig.setClock(t);
      if (kill && !killed && t >= killAt && rig.live().length > 1) {
        await rig.tickAll();
        killed = await killOneBusy(rig, t);
        if (killed) {
          const from = performance.now();
          const at = Date.now();
          await rig.drained();
          // The fleet counts as drained once no run it knows of is left; a dead replica's runs are known only once
          // pg-boss's monitor has counted them active, so in a small fleet the drain can end before they are even
          // failed. Their restart is waited for here (the clock stands still), up to five minutes.
          const restarted = async () => (await rig.retriedRuns()).filter((j) => killed!.runs.includes(j.key) && j.startedOn);
          let retried = await restarted();
          for (const until = performance.now() + 300_000; retried.length < killed.runs.length && performance.now() < until;) {
            await new Promise((r) => setTimeout(r, 1000));
            retried = await restarted();
          }
          if (retried.length < killed.runs.length)
            log(`only ${retried.length} of the killed replica's ${killed.runs.length} runs restarted within 5 min`);
          await rig.drained();
          killed.resumeSeconds = (performance.now() - from) / 1000;
          killed.restartSeconds = Math.max(0, ...retried.map((j) => (j.startedOn!.getTime() - at) / 1000));
          const last = retried.reduce<(typeof retried)[number] | null>((a, j) => (!a || j.startedOn! > a.startedOn! ? j : a), null);
          if (last) {
            killed.failedSeconds = (last.startAfter.getTime() - RETRY_DELAY_SECONDS * 1000 - at) / 1000;
            killed.takenSeconds = (last.startedOn!.getTime() - last.startAfter.getTime()) / 1000;
          }
          log(
            `replica ${killed.replica} killed with ${killed.runs.length} runs; all work ended elsewhere ${fmtNum(killed.resumeSeconds, 1)} s later`,
          );
        } else await rig.drained();
      } else await rig.tick();
      pending = await rig.markVisible(pending, t);
      if ((t - rig.dayStart) % (2 * HOUR) === 0)
        log(`${rig.localTime(t)}: ${fmtInt(tracked.length - pending.length)}/${fmtInt(tracked.length)} changes visible`);
    }
    const requests = rig.allRequests();
    const rejected = Object.values(rig.sim.stats().byApikey).reduce((n, u) => n + u.rejected, 0);
    const dayTicks = rig.ticks.slice(firstTicks);
    const cpu = rig.live().map((r) => cpuSeconds(r));
    rig.sampleMemory();
    const peakRssBytes = rig.replicas.map((r) => r.peakRss);
    const rises = rig.memoryTrace.map((m) => ({ ...m, at: rig.localTime(m.at) }));
    const peakRssAt = rig.replicas.map((r) => rises.findLast((m) => m.replica === r.index)?.at ?? '-');
    const rssRises = rises.map((m) => ({
      at: m.at,
      replica: m.replica,
      rssMb: Math.round(m.rss / 2 ** 20),
      peakMb: Math.round(m.hwm / 2 ** 20),
    }));
    const statusStarted = performance.now();
    const status = await rig.cli(['status', '--problems', '--limit', '5']);
    const statusSeconds = (performance.now() - statusStarted) / 1000;

    // The next quota day: every practice read once more, then compared with the simulator.
    rig.setClock(rig.dayStart + DAY + HOUR);
    log('reading every practice once more (pmsync sync) and comparing with the simulator');
    const settle = await rig.cli(['sync', '--quiet']);
    if (settle.code !== 0) log(`pmsync sync exited ${settle.code}: ${settle.stderr.slice(-2000)}`);
    const compare = await rig.compare();
    return {
      practices,
      firstPractice,
      replicas,
      requests: requests.map((r) => r.used),
      rejected,
      changes: tracked,
      firstPassTicks,
      schedulerCpuSeconds: dayTicks.reduce((s, x) => s + x.cpuMicros, 0) / 1e6,
      tickWallMs: dayTicks.map((x) => x.wallMs),
      replicaCpuSeconds: cpu,
      peakRssBytes,
      peakRssAt,
      rssRises,
      kill: killed,
      compare,
      settleExit: settle.code,
      status: { seconds: statusSeconds, output: status.stdout.trimEnd() },
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await rig.close();
    await db.drop();
  }
}

/** Kills a replica that is running work right now; null if none runs anything. Every replica decides some shards. */
async function killOneBusy(rig: FleetRig, t: number): Promise<DayResult['kill']> {
  const probes = await Promise.all(rig.live().map(async (r) => ({ r, p: await rig.probe(r) })));
  const busy = probes.filter((x) => x.p.running.length > 0);
  const victim = busy[0];
  if (!victim) return null;
  await rig.kill(victim.r);
  return {
    atLocal: rig.localTime(t),
    replica: victim.r.index,
    runs: victim.p.running,
    restartSeconds: 0,
    resumeSeconds: 0,
    failedSeconds: null,
    takenSeconds: null,
    queuedAtKill: await rig.queuedRuns(),
    decidingKilled: victim.p.deciding,
  };
}

/** User + system CPU seconds of a live process so far (from /proc). */
function cpuSeconds(r: Replica): number {
  try {
    const fields = readFileSync(`/proc/${r.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

function staleness(changes: TrackedChange[]): {
  visible: number;
  busy: number;
  within: number;
  p50: number;
  p95: number;
  max: number;
  streams: number;
  streamsWithin: number;
} {
  const mins = changes.filter((c) => c.visibleAt !== null).map((c) => (c.visibleAt! - c.at) / MINUTE);
  const busy = changes.filter((c) => BUSY.includes(c.resource));
  const busyMins = busy.filter((c) => c.visibleAt !== null).map((c) => (c.visibleAt! - c.at) / MINUTE);
  const byStream = new Map<string, number>();
  for (const c of busy) {
    const key = `${c.source}/${c.resource}`;
    const m = c.visibleAt === null ? Infinity : (c.visibleAt - c.at) / MINUTE;
    byStream.set(key, Math.max(byStream.get(key) ?? 0, m));
  }
  return {
    visible: mins.length,
    busy: busy.length,
    within: busyMins.filter((m) => m <= TARGET_MINUTES).length,
    p50: percentile(mins, 50),
    p95: percentile(mins, 95),
    max: mins.reduce((m, x) => Math.max(m, x), 0),
    streams: byStream.size,
    streamsWithin: [...byStream.values()].filter((m) => m <= TARGET_MINUTES).length,
  };
}

/** The practices played alone as one row: their requests, changes and records together, the largest replica's peak. */
function pooled(alone: DayResult[]): DayResult {
  const peak = Math.max(...alone.map((r) => r.peakRssBytes[0] ?? 0));
  return {
    ...alone[0]!,
    practices: alone.length,
    requests: alone.flatMap((r) => r.requests),
    rejected: alone.reduce((n, r) => n + r.rejected, 0),
    changes: alone.flatMap((r) => r.changes),
    schedulerCpuSeconds: alone.reduce((n, r) => n + r.schedulerCpuSeconds, 0),
    tickWallMs: alone.flatMap((r) => r.tickWallMs),
    peakRssBytes: [peak],
    peakRssAt: [alone.find((r) => r.peakRssBytes[0] === peak)?.peakRssAt[0] ?? '-'],
    compare: {
      records: alone.reduce((n, r) => n + r.compare.records, 0),
      lost: alone.reduce((n, r) => n + r.compare.lost, 0),
      duplicated: alone.reduce((n, r) => n + r.compare.duplicated, 0),
      examples: alone.flatMap((r) => r.compare.examples),
    },
    seconds: Math.max(...alone.map((r) => r.seconds)),
  };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (a: number, b: number) => `${a >= b ? '+' : ''}${fmtNum((100 * (a - b)) / b, 1)}%`;

/** Each practice played alone against the same practice in the fleet: requests and staleness, practice by practice. */
function paired(
  alone: DayResult[],
  fleet: DayResult,
): { text: string; requests: { alone: number; fleet: number }; p95: { alone: number; fleet: number } } {
  const rows = alone.map((a) => {
    const name = sourceName(a.firstPractice);
    const inFleet = staleness(fleet.changes.filter((c) => c.source === name));
    const own = staleness(a.changes);
    return [name, String(a.requests[0]), String(fleet.requests[a.firstPractice]), `${fmtNum(own.p95, 0)} / ${fmtNum(inFleet.p95, 0)}`];
  });
  const names = new Set(alone.map((a) => sourceName(a.firstPractice)));
  const aloneRequests = mean(alone.map((a) => a.requests[0]!));
  const fleetRequests = mean(alone.map((a) => fleet.requests[a.firstPractice]!));
  const aloneP95 = staleness(alone.flatMap((a) => a.changes)).p95;
  const fleetP95 = staleness(fleet.changes.filter((c) => names.has(c.source))).p95;
  const same = alone.filter((a) => a.requests[0] === fleet.requests[a.firstPractice]).length;
  const text = [
    table(['practice', 'requests alone', 'requests in the fleet', 'staleness p95 alone / in the fleet (min)'], rows),
    '',
    `The ${alone.length} practices played alone spent ${fmtNum(aloneRequests, 1)} requests on average and ${fmtNum(fleetRequests, 1)} in the fleet (${pct(fleetRequests, aloneRequests)}; ${same} of ${alone.length} exactly the same); the staleness p95 of their changes was ${fmtNum(aloneP95, 0)} min alone and ${fmtNum(fleetP95, 0)} min in the fleet (${pct(fleetP95, aloneP95)}). Every practice draws its own day, so the fleet's mean over all its practices (${fmtNum(mean(fleet.requests), 1)}) is compared with these practices' only through the draws.`,
  ].join('\n');
  return { text, requests: { alone: aloneRequests, fleet: fleetRequests }, p95: { alone: aloneP95, fleet: fleetP95 } };
}

function report(alone: DayResult[], fleet: DayResult, pair: ReturnType<typeof paired>): string {
  const rows = [pooled(alone), fleet].map((r, n) => {
    const s = staleness(r.changes);
    const sorted = [...r.requests].sort((a, b) => a - b);
    return [
      n === 0
        ? `${r.practices} practice${r.practices > 1 ? 's' : ''}, each alone on its own replica`
        : `${r.practices} practices, ${r.replicas} replica${r.replicas > 1 ? 's' : ''}`,
      `${fmtInt(s.streamsWithin)} / ${fmtInt(s.streams)}`,
      `${fmtNum((100 * s.within) / s.busy, 1)}% of ${fmtInt(s.busy)} (all streams: ${fmtInt(s.visible)} of ${fmtInt(r.changes.length)} changes visible by midnight)`,
      `${fmtNum(s.p50, 0)} / ${fmtNum(s.p95, 0)} / ${fmtNum(s.max, 0)}`,
      `${fmtNum(sorted.reduce((a, b) => a + b, 0) / sorted.length, 1)} (${sorted[0]}-${sorted.at(-1)})`,
      String(r.requests.filter((n) => n > BUDGET).length + (r.rejected > 0 ? ` + ${r.rejected} answered 429` : '')),
      `${fmtNum(r.schedulerCpuSeconds, 1)} s (tick p50 ${fmtNum(percentile(r.tickWallMs, 50), 0)} ms, p95 ${fmtNum(percentile(r.tickWallMs, 95), 0)} ms)`,
      r.peakRssBytes.map((b, i) => `${fmtMb(b)} (${r.peakRssAt[i]})`).join(' / '),
      `${fmtInt(r.compare.records)} records: ${r.compare.lost} lost, ${r.compare.duplicated} duplicated`,
      `${fmtNum(r.seconds / 60, 1)} min`,
    ];
  });
  const k = fleet.kill;
  const killLine = k
    ? `Replica ${k.replica}${k.decidingKilled ? ' (deciding its share of the scheduling shards)' : ''} was killed (SIGKILL) at ${k.atLocal} while it ran ${k.runs.length} run${k.runs.length === 1 ? '' : 's'} (${k.runs.slice(0, 4).join(', ')}${k.runs.length > 4 ? ', ...' : ''}); the last of them started again in another replica ${fmtNum(k.restartSeconds, 1)} s later, and every run of the fleet had ended ${fmtNum(k.resumeSeconds, 1)} s after the kill (real time; the bound with the default heartbeat of 30 s is ${RESTART_BOUND_SECONDS} s to the restart). ${k.failedSeconds === null ? '' : `That run was failed by its lost heartbeat ${fmtNum(k.failedSeconds, 1)} s after the kill, and a worker took it ${fmtNum(k.takenSeconds!, 1)} s after its retry could start (the retry delay is ${RETRY_DELAY_SECONDS} s); ${fmtInt(k.queuedAtKill)} runs were queued across the fleet just after the kill.`}`
    : 'No replica was killed.';
  return [
    table(
      [
        'run',
        `busy streams (${BUSY.join(', ')}) with every change within ${TARGET_MINUTES} min`,
        'their changes visible within it',
        'staleness p50 / p95 / max (min)',
        'requests per source on the day (mean, range)',
        `sources over budget (${BUDGET})`,
        'scheduling CPU over the day (every replica deciding)',
        'peak RSS per replica (reached at)',
        'after the day (pmsync sync, then compared)',
        'wall time',
      ],
      rows,
    ),
    '',
    `The practices alone against the same practices in the fleet (the first row's peak RSS is the largest of their replicas):`,
    '',
    pair.text,
    '',
    killLine,
    '',
    `Replica CPU over the whole run (user + system, s): ${fleet.replicaCpuSeconds.map((c) => fmtNum(c, 0)).join(' / ')} (live replicas at the end).`,
    '',
    `\`pmsync status --problems --limit 5\` at the last tick of the day, as a process (${fmtNum(fleet.status.seconds, 1)} s including start-up):`,
    '',
    '```',
    fleet.status.output,
    '```',
    `Ticks: one every ${TICK / MINUTE} simulated minutes; the freshness target (maxStalenessMinutes) is ${TARGET_MINUTES} minutes for ${BUSY.join(', ')}, the budget's floor (24 h) for the other streams; staleness p50/p95/max is over every change; budget ${BUDGET} requests a day per practice.`,
  ].join('\n');
}

const server = await startBenchServer();
try {
  const started = performance.now();
  logLine(`${SAMPLE.length} of the practices, each alone on its own replica (${SAMPLE.map(sourceName).join(', ')})`);
  // Played a few at a time: each tick waits for every run it led to, so what one practice does on its day
  // does not depend on the machine's load; only the wall time does.
  const alone: DayResult[] = [];
  for (let k = 0; k < SAMPLE.length; k += ALONE_AT_ONCE)
    alone.push(...(await Promise.all(SAMPLE.slice(k, k + ALONE_AT_ONCE).map((p) => playDay(server, 1, 1, false, p)))));
  logLine(`${PRACTICES} practices on ${REPLICAS} replicas`);
  const fleet = await playDay(server, PRACTICES, REPLICAS, !values['no-kill']);
  const figures = () => ({
    alone: alone.map((a) => ({ ...a, changes: staleness(a.changes) })),
    fleet: { ...fleet, changes: staleness(fleet.changes) },
  });
  // The raw figures first, so a report that fails to format loses nothing.
  mkdirSync(join(ROOT, 'bench', 'out'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'out', `fleet-raw-${Date.now()}.json`), JSON.stringify(figures()));
  const pair = paired(alone, fleet);
  const command = `node bench/fleet.ts ${process.argv.slice(2).join(' ')}`.trim();
  const markdown = [
    '# pmsync fleet benchmark',
    '',
    `- Command: \`${command}\``,
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 1024 ** 3).toFixed(1)} GiB, Node ${process.version}, load average at the end ${loadavg()
      .map((l) => fmtNum(l, 1))
      .join(' ')}`,
    `- PostgreSQL: ${server.label}`,
    `- pmsync started as ${STARTS[START].label}`,
    `- Wall time: ${fmtNum((performance.now() - started) / 60_000, 1)} min`,
    '',
    report(alone, fleet, pair),
    '',
  ].join('\n');
  const out = join(ROOT, 'bench', 'out');
  mkdirSync(out, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(out, `fleet-${stamp}.md`), markdown);
  writeFileSync(join(out, `fleet-${stamp}.json`), JSON.stringify({ ...figures(), paired: pair }, null, 2));
  process.stdout.write(markdown);
} finally {
  await server.stop();
}
