/**
 * A new practice's first days, played one after another by pmsync: no
 * history before its first pass (the simulator's seeded records, their
 * ModifiedOn spread round the clock), then the reference day on each weekday
 * (8-19) and nothing on Sundays, a decision every 60 s of simulated time, the
 * default budget of 150. Where bench/days.ts scores one held-out day after
 * a history played before the first pass, this shows whether what pmsync
 * reads day by day makes its next days better: the issue's "converges within
 * a few days".
 *
 *   node bench/new-practice-days.ts --days 4 --seed 7
 *   node bench/new-practice-days.ts --days 2 --trace       every dispatch, by local time
 *   node bench/new-practice-days.ts --date 2026-11-20      its first day a Friday (the default a Thursday)
 *   node bench/new-practice-days.ts --small                 a few hundred records of each stream (the tests' practice)
 *   node bench/new-practice-days.ts --small --date 2026-11-20 --day-seed 5
 *                                                          the days drawn with seeds 5, 6, ...: the draw of the test
 *                                                          "gives its second weekday the hours its first showed"
 *   node bench/new-practice-days.ts --days 5 --status-at 5@17:50,5@18:30   what status says of each busy stream then
 *   node bench/new-practice-days.ts --plan-every-tick       the source planned at every tick, not only when its inputs change
 *
 * BENCH_DATABASE_URL points it at a PostgreSQL (the embedded one otherwise).
 * Requests are the simulator's own count; staleness counts a change never
 * read as stale until local midnight.
 */
import { parseArgs } from 'node:util';
import { planDay, REFERENCE_DAY } from '../simulator/day.ts';
import { collectStatus } from '../src/status/detail.ts';
import { rigOptions, SIZES, SMALL_SIZES } from './support/baselines.ts';
import { DAY, DayRig, HOUR } from './support/day-rig.ts';
import { createBenchDatabase, startBenchServer } from './support/db.ts';
import { DATE, stalenessWithUnread, ZONE } from './support/held-out.ts';

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '4' },
    seed: { type: 'string', default: '7' },
    date: { type: 'string', default: DATE },
    small: { type: 'boolean', default: false },
    webhooks: { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
    'status-at': { type: 'string', default: '' },
    'plan-every-tick': { type: 'boolean', default: false },
    'day-seed': { type: 'string' },
  },
});
/** A whole-number option, or every problem with the options listed and the run refused. */
const problems: string[] = [];
const whole = (name: string, text: string | undefined, min: number): number => {
  const n = Number(text);
  if (text === undefined || !Number.isInteger(n) || n < min)
    problems.push(`--${name} must be a whole number of at least ${min}, not "${text}"`);
  return n;
};
const DAYS = whole('days', values.days, 1);
const SEED = whole('seed', values.seed, 0);
const DAY_SEED = values['day-seed'] === undefined ? null : whole('day-seed', values['day-seed'], 0);
if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(2);
}
/** The seed of day d's changes (0-based): `--day-seed` + d, or by default one derived from `--seed`. */
const daySeed = (d: number) => (DAY_SEED !== null ? DAY_SEED + d : SEED * 1000 + 100 + d);
const BUSY = ['appointments', 'customers', 'orders'];
const localTime = (ms: number) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(ms);
/** `day@HH:MM` instants (the first day is 1) at which the busy streams' status is printed to stderr. */
const STATUS_AT = new Set(values['status-at'] ? values['status-at'].split(',') : []);

const server = await startBenchServer();
const db = await createBenchDatabase(server, { migrate: false });
const rig = await DayRig.start({
  databaseUrl: db.url,
  date: values.date,
  timeZone: ZONE,
  sizes: values.small ? SMALL_SIZES : SIZES,
  history: [],
  tickSeconds: 60,
  seed: SEED,
  webhooks: false,
  ...rigOptions({ kind: 'budget', budget: 150, webhooks: values.webhooks }),
  planEveryTick: values['plan-every-tick'],
});
try {
  await rig.prepare();
  console.log(`# A new practice's first ${DAYS} days (seed ${SEED}, ${values.webhooks ? 'with' : 'without'} webhooks, budget 150)\n`);
  console.log(
    '| day | requests | busy p50 / p95 / max incl. unread | busy unread | checks before 8:00 / after 19:00 | slowest busy changes | by stream |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (let d = 0; d < DAYS; d++) {
    const start = rig.dayStart + d * DAY;
    const date = rig.localDate(start + 12 * HOUR);
    const sunday = new Date(`${date}T12:00:00Z`).getUTCDay() === 0;
    const changes = sunday ? [] : planDay(REFERENCE_DAY, date, ZONE, daySeed(d));
    const status = async (t: number) => {
      if (!STATUS_AT.has(`${d + 1}@${localTime(t)}`)) return;
      const [source] = await collectStatus(rig.app, rig.config, { scheduler: rig.serve.scheduler });
      for (const r of source!.resources.filter((r) => BUSY.includes(r.resource))) {
        const s = r.schedule;
        process.stderr.write(
          `  status day ${d + 1} ${localTime(t)} ${r.resource}: ${s?.changeRatePerHour?.toFixed(2) ?? '-'} changes an hour, ` +
            `${s?.expectedChecksToday?.toFixed(1) ?? '-'} checks expected, next ${s?.nextCheck ? `${localTime(Date.parse(s.nextCheck.at))} (${s.nextCheck.reason})` : '-'}` +
            `${s?.waiting ? `, waiting: ${s.waiting}` : ''}\n`,
        );
      }
    };
    const played = await rig.play(changes, start, start + DAY, STATUS_AT.size > 0 ? status : undefined, 60);
    const busy = stalenessWithUnread(played.changes, start + DAY, (c) => BUSY.includes(c.resource));
    const req = rig.requestsOn(start, start + DAY);
    const fired = played.dispatches.map((j) => Date.parse(j.firedAt));
    const slowest = played.changes
      .filter((c) => BUSY.includes(c.resource))
      .map((c) => ({ resource: c.resource, at: c.at, minutes: ((c.visibleAt ?? start + DAY) - c.at) / 60_000 }))
      .sort((a, b) => b.minutes - a.minutes)
      .slice(0, 3)
      .map((c) => `${c.resource} ${localTime(c.at)} ${c.minutes.toFixed(0)} min`)
      .join(', ');
    const staleness = busy.changes === 0 ? '-' : `${busy.p50.toFixed(1)} / ${busy.p95.toFixed(1)} / ${busy.max.toFixed(1)}`;
    console.log(
      `| ${date}${sunday ? ' (Sunday, no changes)' : ''} | ${req.requests} | ${staleness} | ${busy.unread} of ${busy.changes} | ` +
        `${fired.filter((t) => t < start + 8 * HOUR).length} / ${fired.filter((t) => t >= start + 19 * HOUR).length} | ${slowest || '-'} | ` +
        `${Object.entries(req.requestsByStream)
          .sort((a, b) => b[1] - a[1])
          .map(([r, n]) => `${r} ${n}`)
          .join(', ')} |`,
    );
    if (values.trace)
      for (const j of played.dispatches)
        process.stderr.write(`  day ${d + 1} ${localTime(Date.parse(j.firedAt))} ${j.resource} ${j.purpose} (${j.reason})\n`);
  }
} finally {
  await rig.close();
  await db.drop();
  await server.stop();
}
