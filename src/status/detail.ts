/**
 * The per-source detail of `pmsync status` (text and --json) and of the
 * status page, as plain data: per source its quota day, the budget spent and
 * planned by purpose and what a cron sync reaches with it; per resource its
 * rows, cursor, open window and how long it still needs, last run,
 * quarantined records, schedule and freshness, schema drift; with --check,
 * the source's answer to one connectivity request.
 */
import { quotaSettingsFor, type App } from '../app.ts';
import { pagesLeft } from '../api/pager.ts';
import type { Purpose } from '../api/http.ts';
import type { Config } from '../config/schema.ts';
import { countRows } from '../db/rows.ts';
import { PmsyncError, type ErrorCode } from '../errors.ts';
import { readCheckpoints } from '../state/checkpoints.ts';
import { driftFindings, type StoredFinding } from '../state/drift.ts';
import { countQuarantined } from '../state/quarantine.ts';
import { allowance } from '../state/quota.ts';
import { lastRun } from '../state/runs.ts';
import { readBound, type CheckBound } from '../sync/coverage.ts';
import { describePosition } from '../sync/readers/pro-session.ts';
import { checkConnectivity } from '../sync/source-kinds.ts';
import { resourceTablesFor } from '../sync/streams/index.ts';
import { sourceTimeZone } from '../scheduler/plan.ts';
import { closingRange, type SourceView, type Workday } from '../scheduler/observe.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { slotOf } from '../time.ts';
import { streamNextCheck, type SourceHealth } from './fleet.ts';

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
  /**
   * By stream, the local hours ("18:00") of today's slowest busy hours, checked at twice the busy interval: together
   * a twenty-fifth of the busy streams' changes, which the day's 95th percentile can afford to wait longer
   * (src/scheduler/budget.ts, slackSlots). Empty when there is no interval.
   */
  busySlackHours: Record<string, string[]>;
  /** Requests held back from the plan for a busier day than expected (released over the day's last hours). */
  reserve: number;
  /**
   * The practice's hours are not known yet (a new practice) and webhooks are registered: today's working day as its
   * notifications show it, and when it is expected to close (docs/operations.md). Null otherwise.
   */
  workday: { since: string; closingFrom: string; closingTo: string } | null;
  /**
   * The practice's hours are not known yet and no webhooks are registered: the first change its checks found today,
   * from which its streams' rates are read (docs/operations.md). Null otherwise, and before one.
   */
  atWorkSince: string | null;
  /**
   * For such a practice: the end of the longest working day it may have today, to which its streams' rates hold
   * (twelve hours after it was found at work, or as long again as it has worked once seen at work past that).
   */
  atWorkUntil: string | null;
  /**
   * The opening hours its operator stated (the source's `hours`), and whether the plan goes by them: until the
   * practice's own changes show its hours, then by those (docs/operations.md). Null when none are stated.
   */
  hoursStated: { hours: string[]; inUse: boolean } | null;
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

/** A source's answer to one connectivity request; `code` is the error's stable code. */
export type Connectivity = { ok: true; checked: string } | { ok: false; error: string; code: ErrorCode | 'UNEXPECTED' };

export interface SourceStatus {
  source: string;
  kind: string;
  quota: { day: string; used: number; dailyLimit: number; exhaustedUntil: string | null; resetsAt: string } | null;
  /** The scheduled-spend budget: spent today by purpose, and planned for the rest of the day. */
  budget: BudgetStatus;
  resources: ResourceStatus[];
  /** With --check: the answer to one connectivity request. */
  connectivity?: Connectivity;
  /** Its verdict in the fleet summary (src/status/fleet.ts). */
  health?: SourceHealth;
}

export async function collectStatus(
  app: App,
  config: Config,
  options: { check?: boolean; scheduler?: Scheduler } = {},
): Promise<SourceStatus[]> {
  // Reads the run queue, so its module brings pg-boss: loaded only when status is asked for (src/cli/main.ts).
  const { runningIn, sourceViews } = await import('./views.ts');
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
              error: r.errorMessage,
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
        busySlackHours: Object.fromEntries(
          Object.entries(view.plan.slackHours).map(([r, hours]) => [r, hours.map((h) => `${String(h).padStart(2, '0')}:00`)]),
        ),
        reserve: view.plan.reserve,
        workday: view.workday && workdayStatus(view.workday),
        atWorkSince: view.atWorkSince?.toISOString() ?? null,
        atWorkUntil: view.atWorkUntil?.toISOString() ?? null,
        hoursStated: 'hours' in source && source.hours ? { hours: source.hours, inUse: view.hoursStated } : null,
      },
      resources,
      ...(options.check ? { connectivity: await connectivityOf(app, source) } : {}),
    });
  }
  return out;
}

/** The busy interval's slack hours as `status` and the status page say them: "" when there are none. */
export function slackText(hours: BudgetStatus['busySlackHours']): string {
  const parts = Object.entries(hours).map(([resource, at]) => `${resource} ${at.join(', ')}`);
  return parts.length === 0 ? '' : `; twice that in today's slowest busy hours (${parts.join('; ')})`;
}

function workdayStatus(w: Workday): BudgetStatus['workday'] {
  const closing = closingRange(w);
  return {
    since: new Date(w.from).toISOString(),
    closingFrom: new Date(closing.from).toISOString(),
    closingTo: new Date(closing.to).toISOString(),
  };
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

/** One connectivity request to a source (status --check), and its answer. */
export async function connectivityOf(app: App, source: Config['sources'][number]): Promise<Connectivity> {
  try {
    const c = await checkConnectivity(app.ctx, source);
    return { ok: true, checked: `GET ${c.checked}` };
  } catch (err) {
    return { ok: false, error: (err as Error).message, code: err instanceof PmsyncError ? err.code : 'UNEXPECTED' };
  }
}

function syncChecksOf(bound: CheckBound): BudgetStatus['syncChecks'] {
  return { needed: bound.needed, streams: bound.streams, boundDays: Number.isFinite(bound.days) ? bound.days : null };
}
