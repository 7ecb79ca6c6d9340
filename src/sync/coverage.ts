/**
 * Whether the runs a source gets keep every one of its streams moving: the
 * bound within which checks reach every stream, and the streams that stalled.
 * The rules are pure functions; `readBound` and `readStalls` gather their inputs.
 *
 * A run checks caught-up streams stalest first under the scheduled-spend
 * budget (planner.ts). When one quota day's budget cannot pay a check of every
 * stream, a run a quota day (the cron container) reaches each of them within
 * `ceil(needed / budget)` quota days, where `needed` is what checking every
 * stream once costs (each stream's recent checks, at least one request).
 *
 * A stream stalls when:
 * - work remained in it (a first pass or an unfinished window) and it made no
 *   progress for a whole quota day, while the source's backfills made none
 *   either: a backfill waiting behind another one that moves is queued, not
 *   stalled (the day's allowance went to backfills either way);
 * - or it is caught up and was last checked more quota days ago than the
 *   bound.
 * A multi-day backfill that moves every day, and a run that ended because the
 * day's budget or allowance was spent as planned, are healthy.
 */
import { readProgress } from '../state/checkpoints.ts';
import { quotaDayOf } from '../state/quota-day.ts';
import { UNLIMITED } from '../config/schema.ts';
import type { QuotaLedger } from '../state/quota.ts';
import { CHECK_COST_RUNS, recentCheckCosts } from '../state/runs.ts';
import type { SyncContext } from './context.ts';

export interface CheckBound {
  /** Requests a quota day that checks may spend. */
  budget: number;
  /** What checking every stream once costs, in requests. */
  needed: number;
  streams: number;
  /** Quota days within which a run a day checks every stream (1: every stream every day). */
  days: number;
}

/** The bound of stalest-first checks: `costs` are each stream's requests per check (at least 1 each). */
export function checkBound(budget: number, costs: number[]): CheckBound {
  const needed = costs.reduce((sum, c) => sum + Math.max(1, Math.ceil(c)), 0);
  const days = budget >= UNLIMITED || needed <= budget ? 1 : budget <= 0 ? Number.POSITIVE_INFINITY : Math.ceil(needed / budget);
  return { budget, needed, streams: costs.length, days };
}

/** One line for an operator when the budget cannot check every stream each day; null when it can. */
export function boundWarning(source: string, bound: CheckBound): string | null {
  if (bound.days <= 1) return null;
  const every = Number.isFinite(bound.days) ? `each at least every ${bound.days} quota days` : 'none of them until the budget is raised';
  return (
    `The scheduled-spend budget of "${source}" (${bound.budget} requests a quota day) cannot check each of its ${bound.streams} streams once a day ` +
    `(that takes about ${bound.needed} requests): one sync a quota day checks them stalest first, ${every}. ` +
    `A budget of ${bound.needed} or more would check every stream daily (schedules.budget, or the source's budget).`
  );
}

export interface StreamCoverage {
  resource: string;
  /** End of the last completed window; null before the first pass completed. */
  cursor: Date | null;
  /** A window is open: work is left in it. */
  open: boolean;
  /** When a unit of an open window or of a backfill was last committed (pmsync's clock). */
  progressedAt: Date | null;
}

export interface Stall {
  resource: string;
  reason: string;
}

export interface CoverageInput {
  streams: StreamCoverage[];
  bound: CheckBound;
  /** The quota day now (YYYY-MM-DD) and when it started. */
  today: string;
  dayStart: Date;
  /** The quota day an instant falls on. */
  dayOf(at: Date): string;
  /** Whether the source's backfills moved this quota day (a unit committed). */
  backfillsMoved: boolean;
}

const DAY_MS = 86_400_000;

/** Whole quota days from `from` to `to` (both YYYY-MM-DD). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** The streams that stalled, each with the line that says why. */
export function findStalls(input: CoverageInput): Stall[] {
  const out: Stall[] = [];
  for (const s of input.streams) {
    const work = s.cursor === null || s.open;
    if (work) {
      const moved = s.progressedAt !== null && s.progressedAt >= input.dayStart;
      if (moved || input.backfillsMoved) continue;
      const since = s.progressedAt ? `since ${s.progressedAt.toISOString()}` : 'since it was configured';
      out.push({
        resource: s.resource,
        reason:
          `no progress ${since} while work remains (${s.cursor === null ? 'its first pass' : 'an unfinished window'}), ` +
          `and no backfill moved on quota day ${input.today}: the quota was spent before pmsync could use it (other integrations on the same key, or a 429)`,
      });
      continue;
    }
    const age = daysBetween(input.dayOf(s.cursor!), input.today);
    if (age > input.bound.days) {
      out.push({
        resource: s.resource,
        reason:
          `last checked ${age} quota days ago (up to ${s.cursor!.toISOString()}), past its bound of ${input.bound.days}: ` +
          `raise the budget to ${input.bound.needed} or run the sync more often`,
      });
    }
  }
  return out;
}

/**
 * The bound of a source's selected streams under its budget, from their recent
 * checks (a stream never checked costs one request).
 */
export async function readBound(ctx: Pick<SyncContext, 'pool'>, source: string, resources: string[], budget: number): Promise<CheckBound> {
  const costs = await recentCheckCosts(ctx.pool, source, CHECK_COST_RUNS);
  return checkBound(
    budget,
    resources.map((r) => costs.get(r) ?? 1),
  );
}

/** The stalls among a source's selected streams after a run; `backfillPages` are the pages this run's backfills committed. */
export async function readStalls(
  ctx: Pick<SyncContext, 'pool'>,
  source: string,
  resources: string[],
  bound: CheckBound,
  ledger: Pick<QuotaLedger, 'snapshot' | 'settings'>,
  backfillPages: number,
): Promise<Stall[]> {
  const [stored, quota] = await Promise.all([readProgress(ctx.pool, source), ledger.snapshot()]);
  const byResource = new Map(stored.map((s) => [s.resource, s]));
  const streams = resources.map((r) => byResource.get(r) ?? { resource: r, cursor: null, open: false, progressedAt: null });
  const dayStart = quota.startsAt;
  // Requests spent are not progress (a 429 is counted too): only committed units are.
  const backfillsMoved = backfillPages > 0 || stored.some((s) => s.progressedAt !== null && s.progressedAt >= dayStart);
  return findStalls({
    streams,
    bound,
    today: quota.day,
    dayStart,
    dayOf: (at) => quotaDayOf(at, ledger.settings).day,
    backfillsMoved,
  });
}
