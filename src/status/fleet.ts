/**
 * The fleet summary of `pmsync status` and the status page: one health
 * verdict per source, worst first, so that among hundreds of practices the
 * few that need a person are on top. Read from what is already recorded
 * (runs, stream_schedule, checkpoints, the quota ledger) with a few
 * set-based queries, whatever the number of sources; only the next check
 * needs the scheduler's view of a source, and it is computed for the sources
 * shown.
 *
 * Verdicts, worst first:
 * - failing: serve has paused the whole source after it failed as a whole
 *   (pmsync.source_health), or a stream's latest finished run failed (or,
 *   with --check, the source did not answer its connectivity request);
 * - over budget: the quota is exhausted (a 429, or every request of the day
 *   used), the scheduled-spend budget is used up, a stream is held until
 *   the quota day resets, or its pinned (cron) streams plan more requests for
 *   the rest of the quota day than the budget or the allowance has left
 *   (src/scheduler/pinned.ts);
 * - behind: a stream is staler than its freshness target (maxStalenessMinutes,
 *   or the floor when it has none), or its first pass or a backfill is still open;
 * - ok.
 * Within a verdict: more failing streams, more of the quota or budget spent,
 * further behind, first.
 */
import type { App } from '../app.ts';
import { loadSourceHealth, type SourceHealth as StoredHealth } from '../state/source-health.ts';
import { quotaSettingsFor } from '../app.ts';
import { UNLIMITED, type Config, type SourceConfig } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { pagesLeft } from '../api/pager.ts';
import { readCheckpointsOf, type StoredCheckpoint } from '../state/checkpoints.ts';
import { quotaSnapshots, type QuotaSnapshot } from '../state/quota.ts';
import { recentCheckCostsOf, recentOutcomes } from '../state/runs.ts';
import { loadStreamSchedulesOf, type StreamScheduleRow } from '../state/stream-schedule.ts';
import { activeHour, nextCheck } from '../scheduler/budget.ts';
import { loadChangeModelsOf } from '../state/change-model.ts';
import { slotOf } from '../time.ts';
import { slotRates } from '../scheduler/rates.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { planStreams, sourceTimeZone, type ScheduleMode, type ScheduledStream } from '../scheduler/plan.ts';
import type { PinnedInput } from '../scheduler/budget.ts';
import { memoFires, pinnedInput, pinnedSpend, type PinnedSpend } from '../scheduler/pinned.ts';
import { CHECK_COST_RUNS as COST_RUNS } from '../state/runs.ts';
import type { SourceView } from '../scheduler/observe.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';

export const VERDICTS = ['failing', 'over budget', 'behind', 'ok'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** Finished runs read per stream to count failures in a row. */
export const FAILURE_RUNS = 5;
/** A last error is cut to this many characters in the summary (`pmsync runs` shows it whole). */
export const ERROR_CHARS = 200;

/** A stream whose latest finished run failed; resource null: the source's connectivity request. */
export interface Failure {
  resource: string | null;
  /** Failed runs in a row, newest first, counted over the last FAILURE_RUNS. */
  failedInARow: number;
  code: string | null;
  /** Redacted and cut to ERROR_CHARS; it may quote what a server sent. */
  message: string | null;
  at: string;
}

export interface SourceHealth {
  source: string;
  kind: string;
  verdict: Verdict;
  /** Why, worst first: names, counts, times and error codes only (never a server's words). */
  reasons: string[];
  /** The worst scheduled stream: first pass open, then furthest past its target, then stalest. */
  stalest: {
    resource: string;
    /** Minutes since every change was last read; null while its first pass is open. */
    minutes: number | null;
    targetMinutes: number | null;
    /** Minutes past its target (0 when within it); null without a target or during the first pass. */
    overdueMinutes: number | null;
  } | null;
  /** Streams whose first pass or backfill window is open. */
  backfills: Array<{ resource: string; firstPass: boolean; pagesLeft: number | null }>;
  /** Scheduled spend today; budget null when unlimited. */
  budget: { used: number; budget: number | null };
  /** What its pinned (cron) streams plan for the rest of the quota day, against what is left; null when none is pinned. */
  pinned: PinnedSpend | null;
  /** Requests today against the daily quota; null for Pro (no quota). */
  quota: { used: number; dailyLimit: number; exhaustedUntil: string | null; resetsAt: string } | null;
  /** The latest time a stream of it is held until (its share of the quota used up). */
  pausedUntil: string | null;
  failures: Failure[];
  /** The newest failure's error. */
  lastError: { resource: string | null; code: string | null; message: string | null; at: string } | null;
  /** The earliest next check of its streams as the plan sees it now; null when not computed or nothing is scheduled. */
  nextCheck: { at: string; resource: string; reason: string } | null;
}

export interface FleetTotals {
  sources: number;
  failing: number;
  overBudget: number;
  behind: number;
  ok: number;
}

export interface FleetSummary {
  at: string;
  /** Over every configured source, before --problems or --limit. */
  totals: FleetTotals;
  /** Worst first. */
  sources: SourceHealth[];
  /** Sources left out by --problems or --limit. */
  omitted: number;
}

/** What a verdict is judged from, for one source (pure input of judgeSource). */
export interface SourceFacts {
  source: string;
  kind: string;
  quota: QuotaSnapshot;
  hasQuota: boolean;
  streams: StreamFacts[];
  failures: Failure[];
  /** serve's pause of the whole source after it failed as a whole (pmsync.source_health). */
  sourcePause?: { until: Date; kind: string | null; failures: number } | null;
  /** Its pinned streams' fires left today and their cost. */
  pinned?: PinnedInput[];
}

export interface StreamFacts {
  resource: string;
  mode: ScheduleMode['mode'];
  /** maxStalenessMinutes, or the floor for budget streams without one; null: no target. */
  targetMinutes: number | null;
  lastCheckAt: Date | null;
  firstPass: boolean;
  backfill: boolean;
  pagesLeft: number | null;
  pausedUntil: Date | null;
}

/** Pure: a source's verdict and its reasons from what is recorded. */
export function judgeSource(f: SourceFacts, now: Date): SourceHealth {
  const t = now.getTime();
  const q = f.quota;
  const budget = q.budget >= UNLIMITED ? null : q.budget;
  const scheduled = f.streams.filter((s) => s.mode !== 'off');
  const reasons: string[] = [];

  // failing: the stream failing longest, and how many more
  const failures = [...f.failures].sort((a, b) => b.failedInARow - a.failedInARow || Date.parse(b.at) - Date.parse(a.at));
  const first = failures[0];
  if (first) {
    const code = first.code ? ` (${first.code})` : '';
    reasons.push(
      first.resource === null
        ? `connectivity check failed${code}`
        : `${first.resource} failed ${first.failedInARow === 1 ? 'its last run' : `its last ${first.failedInARow} runs`}${code}`,
    );
    if (failures.length > 1) reasons.push(`${failures.length - 1} more failing`);
  }
  const newest = [...f.failures].sort((a, b) => Date.parse(b.at) - Date.parse(a.at))[0];
  const sourcePaused = f.sourcePause && f.sourcePause.until.getTime() > t ? f.sourcePause : null;
  if (sourcePaused)
    reasons.unshift(
      `paused until ${minute(sourcePaused.until)} after ${sourcePaused.failures} failure${sourcePaused.failures === 1 ? '' : 's'}${sourcePaused.kind ? ` (${sourcePaused.kind})` : ''}`,
    );

  // over budget
  const over: string[] = [];
  if (f.hasQuota && q.exhaustedUntil) over.push(`quota exhausted (429) until ${minute(q.exhaustedUntil)}`);
  else if (f.hasQuota && q.used >= q.dailyLimit) over.push(`quota used up: ${q.used} of ${q.dailyLimit}`);
  if (budget !== null && budget > 0 && q.budgetUsed >= budget) over.push(`budget used up: ${q.budgetUsed} of ${budget}`);
  const paused = scheduled.filter((s) => s.pausedUntil && s.pausedUntil.getTime() > t);
  const pausedUntil = paused.reduce<Date | null>((m, s) => (!m || s.pausedUntil! > m ? s.pausedUntil : m), null);
  if (paused.length > 0) over.push(`${listed(paused.map((s) => s.resource))} held until ${minute(pausedUntil!)}`);
  const pinned = pinnedSpend(f.pinned ?? [], q, f.hasQuota);
  if (pinned && pinned.over > 0) over.push(describePinnedOver(pinned));
  reasons.push(...over);

  // behind
  const backfills = scheduled
    .filter((s) => s.firstPass || s.backfill)
    .map((s) => ({ resource: s.resource, firstPass: s.firstPass, pagesLeft: s.pagesLeft }));
  const staleness = scheduled.map((s) => {
    const minutes = s.firstPass || !s.lastCheckAt ? null : Math.max(0, Math.round((t - s.lastCheckAt.getTime()) / 60_000));
    const overdue = minutes === null || s.targetMinutes === null ? null : Math.max(0, minutes - s.targetMinutes);
    return { resource: s.resource, minutes, targetMinutes: s.targetMinutes, overdueMinutes: overdue };
  });
  const late = staleness.filter((s) => (s.overdueMinutes ?? 0) > 0).sort((a, b) => b.overdueMinutes! - a.overdueMinutes!);
  const firstPasses = backfills.filter((b) => b.firstPass).map((b) => b.resource);
  if (firstPasses.length > 0) reasons.push(`first pass open: ${listed(firstPasses)}`);
  const open = backfills.filter((b) => !b.firstPass);
  if (open.length > 0) {
    const pages = open.reduce<number | null>((n, b) => (n === null || b.pagesLeft === null ? null : n + b.pagesLeft), 0);
    reasons.push(`backfill open: ${listed(open.map((b) => b.resource))}${pages !== null ? ` (${pages} page(s) left)` : ''}`);
  }
  const latest = late[0];
  if (latest) {
    reasons.push(`${latest.resource} read ${span(latest.minutes!)} ago, target ${span(latest.targetMinutes!)}`);
    if (late.length > 1) reasons.push(`${late.length - 1} more past target`);
  }

  const verdict: Verdict =
    failures.length > 0 || sourcePaused
      ? 'failing'
      : over.length > 0
        ? 'over budget'
        : backfills.length > 0 || late.length > 0
          ? 'behind'
          : 'ok';
  return {
    source: f.source,
    kind: f.kind,
    verdict,
    reasons,
    stalest: staleness.reduce<SourceHealth['stalest']>((w, s) => (!w || worse(s, w) ? s : w), null),
    backfills,
    budget: { used: q.budgetUsed, budget },
    pinned,
    quota: f.hasQuota
      ? {
          used: q.used,
          dailyLimit: q.dailyLimit,
          exhaustedUntil: q.exhaustedUntil?.toISOString() ?? null,
          resetsAt: q.resetsAt.toISOString(),
        }
      : null,
    pausedUntil: pausedUntil?.toISOString() ?? null,
    failures,
    lastError: newest ? { resource: newest.resource, code: newest.code, message: newest.message, at: newest.at } : null,
    nextCheck: null,
  };
}

/**
 * What the pins plan against what is left, and what to do: a budget too small
 * for them is raised; more than the allowance, no budget can carry.
 */
function describePinnedOver(p: PinnedSpend): string {
  const limit = p.limit!;
  const fix =
    limit.kind === 'budget'
      ? 'schedule them by budget (remove the cron pins) or raise the budget'
      : 'schedule them by budget (remove the cron pins) or pin them less often';
  return (
    `pinned schedules of ${listed(p.resources)} plan ${p.planned} requests for the rest of the quota day, ` +
    `more than the ${limit.left} left of the ${limit.kind} of ${limit.perDay} a day: ${fix}`
  );
}

type Stalest = NonNullable<SourceHealth['stalest']>;

/** First pass open, then further past its target, then staler. */
function worse(a: Stalest, b: Stalest): boolean {
  const rank = (s: Stalest) => (s.minutes === null ? 2 : (s.overdueMinutes ?? 0) > 0 ? 1 : 0);
  if (rank(a) !== rank(b)) return rank(a) > rank(b);
  if (rank(a) === 1) return a.overdueMinutes! > b.overdueMinutes!;
  return (a.minutes ?? 0) > (b.minutes ?? 0);
}

/** How bad a source is within its verdict: larger is worse. */
export function badness(h: SourceHealth): number {
  switch (h.verdict) {
    case 'failing':
      return h.failures.length * 100 + Math.max(...h.failures.map((f) => f.failedInARow));
    case 'over budget': {
      if (h.quota?.exhaustedUntil || (h.quota && h.quota.used >= h.quota.dailyLimit)) return 3;
      if (h.pausedUntil) return 2;
      if (h.budget.budget && h.budget.used >= h.budget.budget) return h.budget.used / h.budget.budget;
      // Pins that will use the budget up: below a budget already used up, more of it planned away first.
      const p = h.pinned;
      return p?.limit && p.over > 0 ? p.over / (p.over + p.limit.perDay) : 0;
    }
    case 'behind':
      return h.backfills.some((b) => b.firstPass)
        ? Number.MAX_SAFE_INTEGER
        : h.backfills.length > 0
          ? Number.MAX_SAFE_INTEGER / 2 + h.backfills.reduce((n, b) => n + (b.pagesLeft ?? 0), 0)
          : (h.stalest?.overdueMinutes ?? 0);
    case 'ok':
      return 0;
  }
}

/** Pure: worst first (verdict, then how bad within it, then name). */
export function sortFleet(list: SourceHealth[]): SourceHealth[] {
  return [...list].sort(
    (a, b) => VERDICTS.indexOf(a.verdict) - VERDICTS.indexOf(b.verdict) || badness(b) - badness(a) || a.source.localeCompare(b.source),
  );
}

export function fleetTotals(list: SourceHealth[]): FleetTotals {
  const n = (v: Verdict) => list.filter((h) => h.verdict === v).length;
  return { sources: list.length, failing: n('failing'), overBudget: n('over budget'), behind: n('behind'), ok: n('ok') };
}

/** "500 sources: 3 failing, 12 over budget, 40 behind, 445 ok" */
export function describeTotals(t: FleetTotals): string {
  return `${t.sources} source${t.sources === 1 ? '' : 's'}: ${t.failing} failing, ${t.overBudget} over budget, ${t.behind} behind, ${t.ok} ok`;
}

/**
 * The failures of each source's streams: those whose latest finished run
 * failed, with how many in a row. The one place "failing" is read from, so a
 * per-source health or back-off record can be joined here later.
 */
export async function readFailures(
  db: Queryable,
  streams: Array<{ source: string; resource: string }>,
  redact: (text: string) => string,
): Promise<Map<string, Failure[]>> {
  const outcomes = await recentOutcomes(db, streams, FAILURE_RUNS);
  const out = new Map<string, Failure[]>();
  for (const s of streams) {
    const runs = outcomes.get(`${s.source}/${s.resource}`) ?? [];
    if (runs[0]?.status !== 'failed') continue;
    const inARow = runs.findIndex((r) => r.status !== 'failed');
    const list = out.get(s.source) ?? [];
    list.push({
      resource: s.resource,
      failedInARow: inARow === -1 ? runs.length : inARow,
      code: runs[0].errorCode,
      message: runs[0].errorMessage === null ? null : shortError(redact(runs[0].errorMessage)),
      at: (runs[0].endedAt ?? runs[0].startedAt).toISOString(),
    });
    out.set(s.source, list);
  }
  return out;
}

/** The first line of an error message, cut to ERROR_CHARS. */
export function shortError(message: string): string {
  const line = message.split('\n')[0]!.trim();
  return line.length > ERROR_CHARS ? `${line.slice(0, ERROR_CHARS - 1)}…` : line;
}

/** A stream's next check as status shows it: pinned streams their next fire, budget streams what the plan expects. */
export function streamNextCheck(view: SourceView, mode: ScheduleMode['mode'], resource: string): { at: Date; reason: string } | null {
  if (mode === 'cron') {
    const fire = view.nextFires.get(resource);
    return fire ? { at: fire, reason: 'cron' } : null;
  }
  if (mode === 'off') return null;
  return nextCheck(view.input, view.plan, resource);
}

/** The earliest next check of a source's streams. */
export function sourceNextCheck(view: SourceView): SourceHealth['nextCheck'] {
  let best: SourceHealth['nextCheck'] = null;
  for (const s of view.streams) {
    const next = streamNextCheck(view, s.schedule.mode, s.resource);
    if (next && (!best || next.at.getTime() < Date.parse(best.at)))
      best = { at: next.at.toISOString(), resource: s.resource, reason: next.reason };
  }
  return best;
}

export interface FleetOptions {
  /** serve's scheduler: its recent views are reused for next checks. */
  scheduler?: Scheduler;
  /** Only sources that are not ok. */
  problems?: boolean;
  /** At most this many sources, worst first. */
  limit?: number;
  /** Failed connectivity requests (status --check), by source. */
  connectivity?: Map<string, { code: string; message: string }>;
  /** False: leave nextCheck null (the caller has the sources' plans already). */
  nextChecks?: boolean;
}

/**
 * The fleet summary: every configured source judged from a handful of
 * queries, sorted worst first, then the next check of the sources shown.
 */
export async function collectFleet(app: App, config: Config, options: FleetOptions = {}): Promise<FleetSummary> {
  const now = app.ctx.now();
  const names = config.sources.map((s) => s.name);
  const planned = planStreams(config.schedules, config.sources, streamCatalog).streams;
  const pinnedStreams = planned.filter((s) => s.schedule.mode === 'cron');
  const [snapshots, schedules, checkpoints, failures, health, models, costs] = await Promise.all([
    quotaSnapshots(app.pool, config.sources.map(quotaSettingsFor), now),
    loadStreamSchedulesOf(app.pool, names),
    readCheckpointsOf(app.pool, names),
    readFailures(app.pool, planned, (text) => app.redactor.redact(text)),
    loadSourceHealth(app.pool),
    loadChangeModelsOf(app.pool, [
      ...new Set(planned.filter((s) => s.schedule.mode === 'budget' && s.maxStalenessMinutes !== null).map((s) => s.source)),
    ]),
    pinnedStreams.length > 0 ? recentCheckCostsOf(app.pool, pinnedStreams, COST_RUNS) : new Map<string, number>(),
  ]);
  const bySource = groupBy(planned, (s) => s.source);
  const fires = memoFires();
  const judged = config.sources.map((source, i) => {
    const connectivity = options.connectivity?.get(source.name);
    // As the scheduler counts them: a stream's recent cost per check, 1 before it has one.
    const pinned = (bySource.get(source.name) ?? []).flatMap(
      (s) => pinnedInput(s, Math.max(1, costs.get(s.key) ?? 1), now, snapshots[i]!.resetsAt, fires) ?? [],
    );
    return judgeSource(
      {
        source: source.name,
        kind: source.kind,
        sourcePause: pauseOf(health.get(source.name)),
        quota: snapshots[i]!,
        hasQuota: source.kind !== 'pro',
        pinned,
        streams: streamFacts(
          bySource.get(source.name) ?? [],
          schedules.get(source.name) ?? new Map(),
          checkpoints.get(source.name) ?? [],
          config.schedules.floorHours * 60,
          (resource) => {
            // As the scheduler holds it: the target in the hours the stream is expected to change, the floor outside them.
            const rates = slotRates(models.get(source.name)?.get(resource) ?? [], now);
            return activeHour(rates[slotOf(now.getTime(), sourceTimeZone(source))]!);
          },
        ),
        failures: [
          ...(connectivity
            ? [
                {
                  resource: null,
                  failedInARow: 1,
                  code: connectivity.code,
                  message: shortError(connectivity.message),
                  at: now.toISOString(),
                },
              ]
            : []),
          ...(failures.get(source.name) ?? []),
        ],
      },
      now,
    );
  });
  const sorted = sortFleet(judged);
  const wanted = options.problems ? sorted.filter((h) => h.verdict !== 'ok') : sorted;
  const shown = options.limit !== undefined ? wanted.slice(0, options.limit) : wanted;
  if (options.nextChecks !== false) await addNextChecks(app, config, shown, options.scheduler);
  return { at: now.toISOString(), totals: fleetTotals(judged), sources: shown, omitted: judged.length - shown.length };
}

function pauseOf(h: StoredHealth | undefined): SourceFacts['sourcePause'] {
  return h?.pausedUntil ? { until: h.pausedUntil, kind: h.lastFailureKind, failures: h.consecutiveFailures } : null;
}

function streamFacts(
  streams: ScheduledStream[],
  rows: Map<string, StreamScheduleRow>,
  checkpoints: StoredCheckpoint[],
  floorMinutes: number,
  /** Whether a budget stream with a freshness target is in an hour it is expected to change. */
  busyNow: (resource: string) => boolean,
): StreamFacts[] {
  const states = new Map(checkpoints.map((c) => [c.resource, c]));
  return streams.map((s) => {
    const row = rows.get(s.resource);
    const state = states.get(s.resource);
    const paging = state?.window?.paging;
    const firstPass = !state || state.cursor === null;
    // A check's window is open while it runs; only a window opened to catch up counts (and a damaged one).
    const backfill = !firstPass && state.open && (state.window === null || state.window.purpose === 'backfill');
    return {
      resource: s.resource,
      mode: s.schedule.mode,
      targetMinutes:
        s.schedule.mode === 'budget'
          ? s.maxStalenessMinutes !== null && busyNow(s.resource)
            ? s.maxStalenessMinutes
            : floorMinutes
          : s.maxStalenessMinutes,
      lastCheckAt: row?.lastCheckAt ?? state?.cursor ?? null,
      firstPass,
      backfill,
      pagesLeft: paging ? pagesLeft(paging) : null,
      pausedUntil: row?.pausedUntil ?? null,
    };
  });
}

async function addNextChecks(app: App, config: Config, shown: SourceHealth[], scheduler?: Scheduler): Promise<void> {
  if (shown.length === 0) return;
  // Reads the run queue, so its module brings pg-boss: loaded only when a summary is asked for (src/cli/main.ts).
  const { sourceViews } = await import('./views.ts');
  const wanted = new Set(shown.map((h) => h.source));
  const sources: SourceConfig[] = config.sources.filter((s) => wanted.has(s.name));
  const views = await sourceViews(app, { ...config, sources }, scheduler);
  const byName = new Map(views.map((v) => [v.source, v]));
  for (const h of shown) {
    const view = byName.get(h.source);
    if (view) h.nextCheck = sourceNextCheck(view);
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const list = out.get(key(item)) ?? [];
    list.push(item);
    out.set(key(item), list);
  }
  return out;
}

/** "a", "a and b", "a, b and c", "a, b, c and 4 more". */
function listed(list: string[]): string {
  if (list.length <= 1) return list.join('');
  if (list.length <= 3) return `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
  return `${list.slice(0, 3).join(', ')} and ${list.length - 3} more`;
}

/** "2026-03-13 00:00 UTC". */
function minute(at: Date): string {
  const iso = at.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** Minutes as "45 min", "3 h", "2 days". */
export function span(minutes: number): string {
  if (minutes < 120) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.round(minutes / 60)} h`;
  return `${Math.round(minutes / 1440)} days`;
}
