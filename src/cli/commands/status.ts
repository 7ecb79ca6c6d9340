/**
 * `pmsync status`: prints what src/status reads, as text or JSON. With several
 * sources the fleet summary, else (or with --source, --detail) the detail of
 * each source; with no source configured, what the database holds.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { App } from '../../app.ts';
import type { Config } from '../../config/schema.ts';
import { configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';
import { EXIT, exitCodeOf } from '../../errors.ts';
import type { RefreshQueueCounts } from '../../webhooks/queue.ts';
import { slackText, type BudgetStatus, type Connectivity, type SourceStatus, type StreamScheduleStatus } from '../../status/detail.ts';
import { describeTotals, span, type FleetSummary, type SourceHealth } from '../../status/fleet.ts';
import { heldSources, privacyResyncs, retentionStatus, type PrivacyResync, type RetentionStatus } from '../../status/notes.ts';
import { collectDetail, collectSummary } from '../../status/report.ts';
import { describeDrift } from './drift.ts';
import { DEMO_SOURCE, describeNoSources } from '../no-sources.ts';

function hoursText(minutes: number): string {
  return minutes >= 120 ? `${Math.round(minutes / 6) / 10} h` : `${Math.round(minutes)} min`;
}

/** The text `pmsync status` appends to a stream's line. */
export function describeSchedule(s: StreamScheduleStatus | null | undefined, now: Date): string {
  if (!s) return '';
  const ago = (iso: string) => {
    const minutes = Math.round((now.getTime() - Date.parse(iso)) / 60_000);
    return minutes < 120 ? `${minutes} min ago` : `${Math.round(minutes / 60)} h ago`;
  };
  const parts: string[] = [];
  const due = s.due ? `due now: ${s.due.replace(/^(\w+) \(\1\)$/, '$1')}` : null;
  if (s.mode === 'off') parts.push('serve: off');
  else if (s.mode === 'cron') parts.push(`serve: pinned to ${s.cron} ${s.timeZone}, next ${s.nextFire ?? 'never'}`);
  else if (!s.lastCheckAt) parts.push(`serve: by budget; first pass ${due ?? s.waiting ?? 'waiting'}`);
  else {
    parts.push(`serve: by budget; read up to ${ago(s.lastCheckAt)}`);
    if (s.notificationsWaiting > 0) parts.push(`${s.notificationsWaiting} notified change(s) waiting`);
    if (s.changeRatePerHour !== null) parts.push(`~${s.changeRatePerHour} changes/h expected now`);
    if (s.expectedChecksToday !== null) parts.push(`~${s.expectedChecksToday} checks planned for the rest of the day`);
    if (due) parts.push(due);
    else if (s.waiting) parts.push(s.waiting);
    else if (s.nextCheck) parts.push(`next check expected ${s.nextCheck.at} (${s.nextCheck.reason})`);
  }
  if (s.warning) parts.push(`WARNING: ${s.warning}`);
  if (s.runningIn) parts.push(`RUNNING NOW in ${s.runningIn}`);
  return `\n      ${parts.join('; ')}`;
}

/**
 * The exit code of `status --check`: 0 when every source answered, else the
 * code the worst failure would give a sync (4 credentials, 5 quota, 6
 * unreachable, 1 anything else), so it works as a pre-flight check. It says
 * whether each source answered, nothing more: a verdict such as behind or
 * over budget (pins planning more than the budget) is for reading, in the
 * text, --json, the status page and the metrics.
 */
export function checkExitCode(answers: Iterable<Connectivity | undefined>): number {
  let code: number = EXIT.OK;
  for (const c of answers) if (c && !c.ok) code = Math.max(code, exitCodeOf(c.code));
  return code;
}

function describeSyncChecks(b: BudgetStatus): string {
  const c = b.syncChecks;
  if (c.boundDays === 1) return `  pmsync sync checks every stream each run (${c.streams} streams, about ${c.needed} requests)\n`;
  if (c.boundDays === null)
    return `  pmsync sync checks no caught-up stream: the budget is 0 (checking all ${c.streams} takes about ${c.needed} requests)\n`;
  return (
    `  pmsync sync checks the stalest first: with one sync a quota day, every stream is checked at least every ${c.boundDays} quota days ` +
    `(checking all ${c.streams} takes about ${c.needed} requests; a budget of ${c.needed} would check each daily)\n`
  );
}

export function printStatus(statuses: SourceStatus[], now: Date): void {
  for (const s of statuses) {
    const q = s.quota;
    process.stdout.write(
      `source ${s.source} (${s.kind})` +
        (q
          ? `: ${q.used}/${q.dailyLimit} requests used on quota day ${q.day}, resets ${q.resetsAt}${q.exhaustedUntil ? `, EXHAUSTED until ${q.exhaustedUntil}` : ''}`
          : '') +
        '\n',
    );
    process.stdout.write(describeHealth(s.health));
    const b = s.budget;
    if (q) {
      const p = b.planned;
      const pinned = s.health?.pinned ? `; ${s.health.pinned.planned} of them by pinned streams` : '';
      process.stdout.write(
        `  budget ${b.budget} a day for checks, webhook-triggered checks and full refreshes: ${b.used} spent (check ${b.spent.check}, webhook ${b.spent.webhook}, full ${b.spent.full}), ` +
          `${p.check + p.webhook + p.full} planned for the rest of the day (check ${p.check}, webhook ${p.webhook}, full ${p.full}${pinned})\n` +
          `  outside the budget: backfill ${b.spent.backfill} spent, ${p.backfill} planned; resync ${b.spent.resync} spent\n` +
          (b.exploreWithinMinutes !== null
            ? `  exploration: every polled stream is checked at least every ${hoursText(b.exploreWithinMinutes)} of the practice's active hours\n`
            : '') +
          (b.busyIntervalMinutes !== null
            ? `  busy hours: polled streams are checked at least every ${b.busyIntervalMinutes} min while they change a few times an hour (the tightest the budget carries today)${slackText(b.busySlackHours)}\n`
            : '') +
          (b.workday !== null
            ? `  hours: not known yet; today's working day read from its notifications since ${b.workday.since}, expected to close between ${b.workday.closingFrom} and ${b.workday.closingTo}\n`
            : '') +
          (b.atWorkSince !== null
            ? `  hours: not known yet; its checks found it at work today since ${b.atWorkSince} (each of its streams not checked since is checked once)${b.atWorkUntil !== null ? `, its rates held until ${b.atWorkUntil} (the longest working day it may have; later if its checks find it at work past that)` : ''}\n`
            : '') +
          (b.hoursStated !== null
            ? b.hoursStated.inUse
              ? `  hours: as stated (${b.hoursStated.hours.join(', ')}) until its changes show its own\n`
              : `  hours: as its changes show them (the stated ${b.hoursStated.hours.join(', ')} are no longer used)\n`
            : ''),
      );
      process.stdout.write(describeSyncChecks(b));
    }
    const c = s.connectivity;
    if (c) process.stdout.write(c.ok ? `  connectivity ok (${c.checked})\n` : `  connectivity FAILED: ${c.error}\n`);
    for (const r of s.resources) {
      const run = r.lastRun ? `last run ${r.lastRun.status} at ${r.lastRun.startedAt} (${r.lastRun.requests} req)` : 'never run';
      const e = r.inWindow?.estimate;
      const pos = r.inWindow?.position
        ? `, resumes ${r.inWindow.position}`
        : r.inWindow
          ? `, resumes at page ${r.inWindow.nextPage}` +
            (e
              ? ` (${e.pagesLeft} of ${e.totalPages} pages left, about ${e.quotaDays} quota day(s) at ${e.dailyAllowance} requests a day)`
              : '')
          : '';
      const quarantined = r.quarantined > 0 ? `, ${r.quarantined} quarantined` : '';
      process.stdout.write(
        `  ${r.resource.padEnd(20)} ${String(r.rows).padStart(8)} rows  cursor ${r.cursor ?? '-'}${pos}  ${run}${quarantined}${describeSchedule(r.schedule, now)}\n`,
      );
      if (r.drift?.length) process.stdout.write(describeDrift(r.drift, '      drift: '));
    }
  }
}

/** The options that ask for the summary, which --source and --detail contradict. */
const SUMMARY_OPTIONS = ['summary', 'problems', 'limit'];

/** The summary's table: one line per source, worst first, totals on top. */
export function printSummary(fleet: FleetSummary, now: Date): void {
  const out: string[] = [describeTotals(fleet.totals), ''];
  const rows = fleet.sources.map((h) => [
    h.source,
    h.verdict,
    stalestText(h),
    `${h.budget.used}/${h.budget.budget ?? 'unlimited'}`,
    h.quota ? `${h.quota.used}/${h.quota.dailyLimit}` : '-',
    nextCheckText(h, now),
    h.reasons.join('; ') || '-',
  ]);
  const header = ['SOURCE', 'HEALTH', 'STALEST', 'BUDGET', 'QUOTA', 'NEXT CHECK', 'WHY'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  out.push(line(header));
  fleet.sources.forEach((h, i) => {
    out.push(line(rows[i]!));
    const e = h.lastError;
    if (e?.message) out.push(`  last error${e.resource ? ` of ${e.resource}` : ''} (${e.code ?? 'error'}, ${e.at}): ${e.message}`);
  });
  if (fleet.sources.length === 0) out.push('(none)');
  if (fleet.omitted > 0) out.push(`${fleet.omitted} more source(s) not shown (--problems, --limit)`);
  out.push('', 'Per-source detail: pmsync status --source NAME');
  process.stdout.write(`${out.join('\n')}\n`);
}

function stalestText(h: SourceHealth): string {
  const s = h.stalest;
  if (!s) return '-';
  if (s.minutes === null) return `${s.resource} first pass`;
  return `${s.resource} ${span(s.minutes)}${s.targetMinutes !== null ? ` / ${span(s.targetMinutes)}` : ''}`;
}

function nextCheckText(h: SourceHealth, now: Date): string {
  if (!h.nextCheck) return '-';
  const minutes = Math.round((Date.parse(h.nextCheck.at) - now.getTime()) / 60_000);
  return minutes <= 0 ? 'due now' : `in ${span(minutes)}`;
}

/** The one line the per-source detail adds: the source's verdict and why. */
function describeHealth(h: SourceHealth | undefined): string {
  if (!h) return '';
  return `  health: ${h.verdict}${h.reasons.length ? ` (${h.reasons.join('; ')})` : ''}\n`;
}

interface StatusOptions {
  json?: boolean;
  check?: boolean;
  source?: string;
  summary?: boolean;
  detail?: boolean;
  problems?: boolean;
  limit?: number;
}

function positive(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new InvalidArgumentError('expected a positive number');
  return Number(text);
}

export function statusCommand(): Command {
  return new Command('status')
    .description(
      'with several sources: a summary, one line per source, worst first (failing, over budget, behind, ok); ' +
        'per source (--source NAME, --detail, or a single source): requests used today and the budget spent and planned by purpose; ' +
        'per resource: rows, cursor, last run, schedule and freshness, quarantined records',
    )
    .option('--json', 'print JSON (per-source detail, each with its "health"; with --summary, --problems or --limit: the summary)')
    .option('--check', 'also send each source one connectivity request (Core: GET /status; Subset: one company; Pro: one event type)')
    .addOption(new Option('-s, --source <name>', 'the detail of this source only').conflicts(SUMMARY_OPTIONS))
    .option('--summary', 'the summary even for a single source (with --json: the summary instead of the detail)')
    .addOption(new Option('--detail', 'the detail of every source, as with a single source').conflicts(SUMMARY_OPTIONS))
    .option('--problems', 'summary: only sources that are not ok')
    .option('-n, --limit <n>', 'summary: at most N sources, worst first', positive)
    .action(async (opts: StatusOptions, cmd: Command) => {
      try {
        const loaded = configFrom(cmd);
        // A pre-flight check of a deployment with no source has nothing to pass.
        if (opts.check) requireSources(loaded);
        const wantsSummary = opts.summary || opts.problems || opts.limit !== undefined;
        const config = opts.source ? { ...loaded, sources: findSource(loaded, opts.source) } : loaded;
        await withApp(loaded, async (app) => {
          if (config.sources.length === 0) {
            // Nothing to report on: say what the database holds and what to do next (on stderr when stdout is JSON).
            const note = describeNoSources(await heldSources(app), {
              demoSource: DEMO_SOURCE,
              psqlUrl: app.embedded ? app.databaseUrl : null,
            });
            if (opts.json) {
              process.stdout.write('[]\n');
              process.stderr.write(note);
            } else process.stdout.write(note);
            return;
          }
          // The queues' module brings pg-boss: loaded only when there are sources to report on (src/cli/main.ts).
          const { whileReadingQueues } = await import('../../status/queues.ts');
          await whileReadingQueues(app, () => report(app, config, opts, wantsSummary));
        });
      } catch (err) {
        fail(err);
      }
    });
}

/** Prints the summary or the detail, while the queues are readable (whileReadingQueues). */
async function report(app: App, config: Config, opts: StatusOptions, wantsSummary: boolean): Promise<void> {
  const { webhookQueue } = await import('../../status/queues.ts');
  // JSON keeps its per-source shape unless the summary is asked for by name.
  const summary = wantsSummary || (!opts.json && !opts.detail && !opts.source && config.sources.length > 1);
  if (summary) {
    const { fleet, checked } = await collectSummary(app, config, { check: opts.check, problems: opts.problems, limit: opts.limit });
    if (opts.json) process.stdout.write(`${JSON.stringify(fleet, null, 2)}\n`);
    else {
      printSummary(fleet, app.ctx.now());
      await printRefreshQueue(await webhookQueue(app.pool, config));
    }
    process.exitCode = checkExitCode(checked?.values() ?? []);
    return;
  }
  const statuses = await collectDetail(app, config, { check: opts.check });
  if (opts.json) process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
  else {
    printStatus(statuses, app.ctx.now());
    await printRefreshQueue(await webhookQueue(app.pool, config));
    printRetention(await retentionStatus(app, config));
    printPrivacyResyncs(await privacyResyncs(app, config));
  }
  process.exitCode = checkExitCode(statuses.map((s) => s.connectivity));
}

async function printRefreshQueue(counts: RefreshQueueCounts | null): Promise<void> {
  if (!counts) return;
  // Its wording lives beside the queue; that module brings pg-boss, loaded only here (src/cli/main.ts).
  const { describeRefreshCounts } = await import('../../webhooks/queue.ts');
  process.stdout.write(`${describeRefreshCounts(counts)}\n`);
}

/** The retention in force and what its last purge removed. */
function printRetention(r: RetentionStatus): void {
  const kept =
    `quarantined payloads ${r.quarantineDays} days, drift findings ${r.driftDays} days, webhook events ${r.webhookEventDays} days, ` +
    `closed history versions ${r.historyDays === null ? 'for good' : `${r.historyDays} days`}`;
  const last = r.lastPurge;
  const removed = last
    ? `; last purge ${last.at.toISOString()} removed ${last.quarantine} quarantined, ${last.drift} drift, ${last.webhookEvents} webhook event, ${last.history} history row(s)`
    : '; nothing purged yet';
  process.stdout.write(`retention: ${kept}${removed}\n`);
}

/** Tables whose column policy was loosened and whose records are not read again yet. */
function printPrivacyResyncs(resyncs: PrivacyResync[]): void {
  for (const p of resyncs)
    process.stdout.write(
      `privacy: ${p.source}/${p.table} holds records stored under a stricter policy since ${p.since} (${p.changes.join('; ')}): ${p.advice}\n`,
    );
}
