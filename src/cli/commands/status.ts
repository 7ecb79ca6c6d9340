import { Command, InvalidArgumentError, Option } from 'commander';
import pLimit from 'p-limit';
import { quotaSettingsFor, type App } from '../../app.ts';
import { pagesLeft } from '../../api/pager.ts';
import type { Config } from '../../config-schema.ts';
import { readCheckpoints } from '../../state/checkpoints.ts';
import { countQuarantined } from '../../state/quarantine.ts';
import { lastFullPass, lastRun } from '../../state/runs.ts';
import { countRows } from '../../db/rows.ts';
import { allowance } from '../../state/quota.ts';
import { describePosition } from '../../sync/readers/pro-session.ts';
import { checkConnectivity } from '../../sync/source-kinds.ts';
import { resourceTablesFor } from '../../sync/streams/index.ts';
import { readBound, type CheckBound } from '../../sync/coverage.ts';
import { lastPurge } from '../../state/retention.ts';
import { pendingResyncs } from '../../state/privacy-policies.ts';
import { readAgainAdvice } from '../../sync/privacy-policies.ts';
import { tableStreams } from '../../sync/table-settings.ts';
import { configFrom, fail, requireSources, withApp } from '../shared.ts';
import { findSource } from '../../config.ts';
import type { Scheduler, SourceView } from '../../scheduler/scheduler.ts';
import { sourceTimeZone } from '../../scheduler/plan.ts';
import { slotOf } from '../../time.ts';
import type { Purpose } from '../../api/http.ts';
import { EXIT, exitCodeOf, PmsyncError, type ErrorCode } from '../../errors.ts';
import { driftFindings, type StoredFinding } from '../../state/drift.ts';
import { describeDrift } from './drift.ts';
import { DEMO_SOURCE, describeNoSources } from '../no-sources.ts';
import { storedSources } from '../../state/sources.ts';
import { collectFleet, describeTotals, span, streamNextCheck, type FleetSummary, type SourceHealth } from '../../scheduler/fleet.ts';

export interface ResourceStatus {
  resource: string;
  table: string;
  rows: number;
  cursor: string | null;
  /** `position` says where a Pro fan-out or capture resumes (its windows have no pages). */
  inWindow: { nextPage: number; end: string; estimate: WindowEstimate | null; position?: string | null } | null;
  lastRun: {
    status: string;
    startedAt: string;
    endedAt: string | null;
    requests: number;
    inserted: number;
    updated: number;
    unchanged: number;
    rejected: number;
    error: string | null;
  } | null;
  quarantined: number;
  /** How `pmsync serve` schedules it and where it stands, and the process running it now, if any. */
  schedule?: StreamScheduleStatus | null;
  /** The table's schema-drift report (pmsync drift). */
  drift?: StoredFinding[];
}

export interface StreamScheduleStatus {
  /** budget, cron (pinned) or off. */
  mode: 'budget' | 'cron' | 'off';
  cron: string | null;
  timeZone: string | null;
  /** Every change up to here has been read (end of the last completed window). */
  lastCheckAt: string | null;
  /** The last run serve dispatched: when, why, and how it ended. */
  lastFire: { at: string; purpose: string | null; reason: string | null; outcome: string | null } | null;
  /** Pinned streams: the next cron fire. */
  nextFire: string | null;
  /** Budget streams: due now (and why), or what it waits for. */
  due: string | null;
  /**
   * Budget streams: when the plan expects the next check if no notification
   * arrives and today's exchange rate holds, and why then; pinned streams:
   * their next fire. Null while it runs.
   */
  nextCheck: { at: string; reason: string } | null;
  waiting: string | null;
  notificationsWaiting: number;
  /** Changes an hour its learned model expects now. */
  changeRatePerHour: number | null;
  /** Checks the plan expects for the rest of the quota day. */
  expectedChecksToday: number | null;
  maxStalenessMinutes: number | null;
  /** Null when it has no freshness target. */
  targetHonoured: boolean | null;
  /** The freshness warning in force, said once in the logs. */
  warning: string | null;
  runningIn: string | null;
}

export interface BudgetStatus {
  budget: number;
  used: number;
  spent: Record<Purpose, number>;
  /** Requests planned for the rest of the quota day. */
  planned: { check: number; webhook: number; full: number; backfill: number };
  /** Change-minutes of staleness a request must clear to be sent now (null: only floors and targets). */
  exchangeRate: number | null;
  /**
   * What `pmsync sync` (a cron) reaches with this budget: checking every
   * stream once costs `needed` requests, so one sync a quota day checks each
   * at least every `boundDays` quota days, stalest first (null: never, the
   * budget is 0). See src/sync/coverage.ts.
   */
  syncChecks: { needed: number; streams: number; boundDays: number | null };
  /**
   * Every polled stream is checked at least once in this many minutes of the
   * practice's active hours (exploration); null when none applies.
   */
  exploreWithinMinutes: number | null;
  /**
   * Polled streams are checked at least this often (minutes) in their busy
   * hours today (the tail rule: the tightest interval the budget carries);
   * null when none applies.
   */
  busyIntervalMinutes: number | null;
  /** Requests held back from the plan for a busier day than expected (released over the day's last hours). */
  reserve: number;
}

/**
 * How far a window is and how many quota days it still needs, assuming this
 * stream gets the whole daily sync allowance (other streams share it).
 */
export interface WindowEstimate {
  totalPages: number;
  pagesRead: number;
  pagesLeft: number;
  /** Requests scheduled syncs may send per quota day (the quota minus the reserve). */
  dailyAllowance: number;
  /** Quota days to finish, the current one included when it still has allowance left. */
  quotaDays: number;
}

/** Pure: the estimate for a window, given what is left of today's allowance. */
export function estimateWindow(
  totalPages: number,
  pagesRead: number,
  left: number,
  dailyAllowance: number,
  leftToday: number,
): WindowEstimate {
  const today = Math.max(0, leftToday);
  const later = Math.max(0, left - today);
  const quotaDays = left === 0 ? 0 : (today > 0 ? 1 : 0) + Math.ceil(later / Math.max(1, dailyAllowance));
  return { totalPages, pagesRead, pagesLeft: left, dailyAllowance, quotaDays };
}

export interface SourceStatus {
  source: string;
  kind: string;
  quota: { day: string; used: number; dailyLimit: number; exhaustedUntil: string | null; resetsAt: string } | null;
  /** The scheduled-spend budget: spent today by purpose, and planned for the rest of the day. */
  budget: BudgetStatus;
  resources: ResourceStatus[];
  /** With --check: the answer to one connectivity request; `code` is the error's stable code. */
  connectivity?: { ok: true; checked: string } | { ok: false; error: string; code: ErrorCode | 'UNEXPECTED' };
  /** Its verdict in the fleet summary (src/scheduler/fleet.ts). */
  health?: SourceHealth;
}

export async function collectStatus(
  app: App,
  config: Config,
  options: { check?: boolean; scheduler?: Scheduler } = {},
): Promise<SourceStatus[]> {
  // Reads the run queue, so its module brings pg-boss: loaded only when status is asked for (src/cli/main.ts).
  const { runningIn, sourceViews } = await import('../../scheduler/status.ts');
  const out: SourceStatus[] = [];
  const [views, holders, drift] = await Promise.all([
    sourceViews(app, config, options.scheduler),
    runningIn(app.pool, config),
    driftFindings(
      app.pool,
      config.sources.map((s) => s.name),
    ),
  ]);
  for (const source of config.sources) {
    const view = views.find((v) => v.source === source.name)!;
    const streams = resourceTablesFor(source);
    const resources: ResourceStatus[] = [];
    const snap = await app.ledgerFor(source).snapshot();
    // Backfills get the allowance less the budget kept for the day's checks.
    const dailyAllowance = Math.max(1, allowance(quotaSettingsFor(source)) - Math.min(source.budget, allowance(quotaSettingsFor(source))));
    const leftToday = snap.exhaustedUntil ? 0 : Math.max(0, snap.allowance - snap.used - Math.max(0, snap.budget - snap.budgetUsed));
    const checkpoints = new Map((await readCheckpoints(app.pool, source.name)).map((c) => [c.resource, c]));
    for (const s of streams) {
      const [rows, r, quarantined] = await Promise.all([
        countRows(app.pool, s.table, source.name),
        lastRun(app.pool, source.name, s.resource),
        countQuarantined(app.pool, source.name, s.resource),
      ]);
      const st = checkpoints.get(s.resource);
      const win = st?.window ?? null;
      const left = win?.paging ? pagesLeft(win.paging) : null;
      const estimate =
        win?.paging && left !== null && win.paging.totalPages !== null
          ? estimateWindow(win.paging.totalPages, win.paging.pagesRead, left, dailyAllowance, leftToday)
          : null;
      resources.push({
        resource: s.resource,
        table: s.table.name,
        rows,
        cursor: st?.cursor?.toISOString() ?? null,
        inWindow: win
          ? { nextPage: win.nextPage, end: win.end, estimate, ...(source.kind === 'pro' ? { position: describePosition(win) } : {}) }
          : null,
        lastRun: r
          ? {
              status: r.status,
              startedAt: r.startedAt.toISOString(),
              endedAt: r.endedAt?.toISOString() ?? null,
              requests: r.requests,
              inserted: r.inserted,
              updated: r.updated,
              unchanged: r.unchanged,
              rejected: r.rejected,
              error: r.error,
            }
          : null,
        quarantined,
        schedule: scheduleStatus(view, source, s.resource, holders.get(`${source.name}/${s.resource}`) ?? null),
        drift: drift.get(`${source.name}/${s.table.name}`) ?? [],
      });
    }
    out.push({
      source: source.name,
      kind: source.kind,
      quota:
        source.kind === 'pro'
          ? null
          : {
              day: snap.day,
              used: snap.used,
              dailyLimit: snap.dailyLimit,
              exhaustedUntil: snap.exhaustedUntil?.toISOString() ?? null,
              resetsAt: snap.resetsAt.toISOString(),
            },
      budget: {
        budget: snap.budget,
        used: snap.budgetUsed,
        spent: snap.byPurpose,
        planned: view.plan.planned,
        exchangeRate: Number.isFinite(view.plan.mu) ? Math.round(view.plan.mu * 10) / 10 : null,
        syncChecks: syncChecksOf(
          await readBound(
            app.ctx,
            source.name,
            streams.map((s) => s.resource),
            source.budget,
          ),
        ),
        exploreWithinMinutes: view.plan.exploreMinutes === null ? null : Math.round(view.plan.exploreMinutes),
        busyIntervalMinutes: view.plan.intervalMinutes === null ? null : Math.round(view.plan.intervalMinutes * 10) / 10,
        reserve: view.plan.reserve,
      },
      resources,
      ...(options.check ? { connectivity: await connectivityOf(app, source) } : {}),
    });
  }
  return out;
}

function scheduleStatus(
  view: SourceView,
  source: Config['sources'][number],
  resource: string,
  holder: string | null,
): StreamScheduleStatus | null {
  const stream = view.streams.find((s) => s.resource === resource);
  if (!stream) return null;
  const row = view.rows.get(resource);
  const input = view.inputs.get(resource);
  const plan = view.plan.streams.find((p) => p.resource === resource);
  const lastCheck = input?.lastCheckAt ?? row?.lastCheckAt ?? null;
  return {
    mode: stream.schedule.mode,
    cron: stream.schedule.mode === 'cron' ? stream.schedule.cron : null,
    timeZone: stream.schedule.mode === 'cron' ? stream.schedule.timeZone : null,
    lastCheckAt: lastCheck?.toISOString() ?? null,
    lastFire: row?.lastFireAt
      ? { at: row.lastFireAt.toISOString(), purpose: row.lastFirePurpose, reason: row.lastFireReason, outcome: row.lastOutcome }
      : null,
    nextFire: view.nextFires.get(resource)?.toISOString() ?? null,
    due: plan?.due ? `${plan.due.purpose} (${plan.due.reason})` : null,
    nextCheck: nextCheckOf(view, stream.schedule.mode, resource),
    waiting: plan?.waiting ?? null,
    notificationsWaiting: input?.notified.count ?? 0,
    changeRatePerHour: input ? Math.round(input.rates[slotOf(view.at.getTime(), sourceTimeZone(source))]! * 100) / 100 : null,
    expectedChecksToday: plan ? Math.round(plan.expectedChecks * 10) / 10 : null,
    maxStalenessMinutes: stream.maxStalenessMinutes,
    targetHonoured: plan?.targetHonoured ?? null,
    warning: row?.warning ?? null,
    runningIn: holder,
  };
}

function nextCheckOf(view: SourceView, mode: StreamScheduleStatus['mode'], resource: string): StreamScheduleStatus['nextCheck'] {
  const next = streamNextCheck(view, mode, resource);
  return next ? { at: next.at.toISOString(), reason: next.reason } : null;
}

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

async function connectivityOf(app: App, source: Config['sources'][number]): Promise<NonNullable<SourceStatus['connectivity']>> {
  try {
    const c = await checkConnectivity(app.ctx, source);
    return { ok: true, checked: `GET ${c.checked}` };
  } catch (err) {
    return { ok: false, error: (err as Error).message, code: err instanceof PmsyncError ? err.code : 'UNEXPECTED' };
  }
}

/**
 * The exit code of `status --check`: 0 when every source answered, else the
 * code the worst failure would give a sync (4 credentials, 5 quota, 6
 * unreachable, 1 anything else), so it works as a pre-flight check. It says
 * whether each source answered, nothing more: a verdict such as behind or
 * over budget (pins planning more than the budget) is for reading, in the
 * text, --json, the status page and the metrics.
 */
export function checkExitCode(statuses: Array<Pick<SourceStatus, 'connectivity'>>): number {
  let code: number = EXIT.OK;
  for (const s of statuses) {
    const c = s.connectivity;
    if (c && !c.ok) code = Math.max(code, exitCodeOf(c.code));
  }
  return code;
}

function syncChecksOf(bound: CheckBound): BudgetStatus['syncChecks'] {
  return { needed: bound.needed, streams: bound.streams, boundDays: Number.isFinite(bound.days) ? bound.days : null };
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
            ? `  busy hours: polled streams are checked at least every ${b.busyIntervalMinutes} min while they change a few times an hour (the tightest the budget carries today)\n`
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
/** Connectivity requests status --check sends at once over a fleet (each to its own source). */
const CHECK_CONCURRENCY = 8;

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

/** The earliest next check of a detailed source, from its streams' schedules. */
function earliestNextCheck(status: SourceStatus): SourceHealth['nextCheck'] {
  let best: SourceHealth['nextCheck'] = null;
  for (const r of status.resources) {
    const next = r.schedule?.nextCheck;
    if (next && (!best || Date.parse(next.at) < Date.parse(best.at))) best = { at: next.at, resource: r.resource, reason: next.reason };
  }
  return best;
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
            const note = describeNoSources(await storedSources(app.pool), {
              demoSource: DEMO_SOURCE,
              psqlUrl: app.embedded ? app.databaseUrl : null,
            });
            if (opts.json) {
              process.stdout.write('[]\n');
              process.stderr.write(note);
            } else process.stdout.write(note);
            return;
          }
          // Queued jobs are read through pg-boss (src/queue.ts), loaded only when there are sources to report on (src/cli/main.ts).
          const { whileReading } = await import('../../queue.ts');
          await whileReading(app, () => report(app, config, opts, wantsSummary));
        });
      } catch (err) {
        fail(err);
      }
    });
}

async function report(app: App, config: Config, opts: StatusOptions, wantsSummary: boolean): Promise<void> {
  // JSON keeps its per-source shape unless the summary is asked for by name.
  const summary = wantsSummary || (!opts.json && !opts.detail && !opts.source && config.sources.length > 1);
  if (summary) {
    const checked = opts.check ? await checkAll(app, config) : null;
    const failed = new Map<string, { code: string; message: string }>();
    for (const [name, c] of checked ?? []) if (!c.ok) failed.set(name, { code: c.code, message: c.error });
    const fleet = await collectFleet(app, config, { problems: opts.problems, limit: opts.limit, connectivity: failed });
    if (opts.json) process.stdout.write(`${JSON.stringify(fleet, null, 2)}\n`);
    else {
      printSummary(fleet, app.ctx.now());
      await printRefreshQueue(app, config);
    }
    process.exitCode = checkExitCode([...(checked?.values() ?? [])].map((connectivity) => ({ connectivity })));
    return;
  }
  const statuses = await collectStatus(app, config, { check: opts.check });
  const failed = new Map<string, { code: string; message: string }>();
  for (const s of statuses)
    if (s.connectivity && !s.connectivity.ok) failed.set(s.source, { code: s.connectivity.code, message: s.connectivity.error });
  // Next checks come from the detail just read, not from a second look at every source.
  const fleet = await collectFleet(app, config, { connectivity: failed, nextChecks: false });
  for (const s of statuses) {
    const health = fleet.sources.find((h) => h.source === s.source);
    if (health) s.health = { ...health, nextCheck: earliestNextCheck(s) };
  }
  if (opts.json) process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
  else {
    printStatus(statuses, app.ctx.now());
    await printRefreshQueue(app, config);
    await printRetention(app, config);
    await printPrivacyResyncs(app, config);
  }
  process.exitCode = checkExitCode(statuses);
}

async function printRefreshQueue(app: App, config: Config): Promise<void> {
  if (!config.sources.some((s) => s.kind === 'core')) return;
  // The refresh queue's module (pg-boss) loads only when there is a queue to report (src/cli/main.ts).
  const { describeRefreshCounts, refreshQueueCounts } = await import('../../webhooks/queue.ts');
  process.stdout.write(`${describeRefreshCounts(await refreshQueueCounts(app.pool))}\n`);
}

/** The retention in force and what its last purge removed (src/state/retention.ts). */
async function printRetention(app: App, config: Config): Promise<void> {
  const r = config.retention;
  const kept =
    `quarantined payloads ${r.quarantineDays} days, drift findings ${r.driftDays} days, webhook events ${config.webhooks.eventRetentionDays} days, ` +
    `closed history versions ${r.historyDays === null ? 'for good' : `${r.historyDays} days`}`;
  const last = await lastPurge(app.pool);
  const removed = last
    ? `; last purge ${last.at.toISOString()} removed ${last.quarantine} quarantined, ${last.drift} drift, ${last.webhookEvents} webhook event, ${last.history} history row(s)`
    : '; nothing purged yet';
  process.stdout.write(`retention: ${kept}${removed}\n`);
}

/** Tables whose column policy was loosened and whose records are not read again yet (src/state/privacy-policies.ts). */
async function printPrivacyResyncs(app: App, config: Config): Promise<void> {
  for (const p of await pendingResyncs(app.pool)) {
    const source = config.sources.find((s) => s.name === p.source);
    const stream = source && tableStreams(source).find((s) => s.table.name === p.table);
    if (!source || !stream) continue;
    // A full pass since the change read them again (the next command that writes clears the note).
    const full = await lastFullPass(app.pool, p.source, stream.resource);
    if (full && full > new Date(p.needed.since)) continue;
    process.stdout.write(
      `privacy: ${p.source}/${p.table} holds records stored under a stricter policy since ${p.needed.since} (${p.needed.changes.join('; ')}): ${await readAgainAdvice(app.pool, source, stream)}\n`,
    );
  }
}

/** status --check over every source, a few at a time. */
async function checkAll(app: App, config: Config): Promise<Map<string, NonNullable<SourceStatus['connectivity']>>> {
  const limit = pLimit(CHECK_CONCURRENCY);
  const answers = await Promise.all(config.sources.map((s) => limit(async () => [s.name, await connectivityOf(app, s)] as const)));
  return new Map(answers);
}
