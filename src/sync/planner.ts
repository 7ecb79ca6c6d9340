/**
 * The order in which a source's streams spend the day's requests.
 *
 * Caught-up streams (a completed first pass, no window left open) are checked
 * first, the stalest first: each check reads every change since the stream's
 * cursor, an incremental list in a page or two, a full refresh in its whole
 * size. They spend the scheduled-spend budget, and when it cannot check every
 * stream in one run, the ones checked longest ago go first, so a cron that
 * runs once a quota day reaches every stream within a bound (coverage.ts).
 *
 * Backfills (a first pass with no cursor yet, or a window left unfinished)
 * run after them, from the allowance, the one with the fewest pages left first
 * (one not started yet counts as small until its first page tells its size),
 * so the day's requests finish as many streams as they can. A backfill larger
 * than what is left of the quota day uses the rest and stops at its
 * checkpoint; the next run on a later quota day resumes it from there without
 * anyone's help.
 */
import { pagesLeft } from '../api/pager.ts';
import type { RestSourceConfig } from '../config/schema.ts';
import { loadState, type StreamState } from '../state/checkpoints.ts';
import type { SyncContext } from './context.ts';
import type { RestStream } from './streams/rest.ts';

export interface StreamPlan {
  stream: RestStream;
  /** `check`: caught up, spends the budget; `backfill`: a first pass or an unfinished window, spends the allowance. */
  phase: 'check' | 'backfill';
  /** End of the last completed window (a check's staleness), null before the first. */
  cursor: Date | null;
  /** Pages left in the open window, when the pager can tell; 0 for a backfill not started yet. */
  pagesLeft: number | null;
}

/** Pure: the phase and remaining size of a stream from its stored state. */
export function planStream(stream: RestStream, state: StreamState): StreamPlan {
  const phase = state.cursor !== null && state.window === null ? 'check' : 'backfill';
  const left = state.window?.paging ? pagesLeft(state.window.paging) : state.window ? null : 0;
  return { stream, phase, cursor: state.cursor, pagesLeft: left };
}

/**
 * Pure: checks, stalest first, then backfills by pages left (unknown last),
 * the given (catalog) order on ties.
 */
export function orderPlans(plans: StreamPlan[]): StreamPlan[] {
  const indexed = plans.map((p, i) => ({ p, i }));
  const size = (p: StreamPlan) => p.pagesLeft ?? Number.POSITIVE_INFINITY;
  const checks = indexed.filter(({ p }) => p.phase === 'check').sort((a, b) => a.p.cursor!.getTime() - b.p.cursor!.getTime() || a.i - b.i);
  const backfills = indexed.filter(({ p }) => p.phase === 'backfill').sort((a, b) => size(a.p) - size(b.p) || a.i - b.i);
  return [...checks, ...backfills].map(({ p }) => p);
}

export async function planOrder(ctx: Pick<SyncContext, 'pool'>, source: RestSourceConfig, streams: RestStream[]): Promise<StreamPlan[]> {
  const plans = await Promise.all(
    streams.map(async (s) => {
      // A damaged checkpoint is reported by the run itself; here it only sorts last.
      const state = await loadState(ctx.pool, source.name, s.resource).catch(() => null);
      return state ? planStream(s, state) : { stream: s, phase: 'backfill' as const, cursor: null, pagesLeft: null };
    }),
  );
  return orderPlans(plans);
}
