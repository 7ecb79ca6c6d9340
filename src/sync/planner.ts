/**
 * The order in which a source's streams spend the day's requests.
 *
 * Streams that are caught up (an incremental stream with a cursor) run first:
 * each costs a page or two and keeps analysts' tables fresh. Backfills (a
 * first pass with no cursor yet, or a full refresh) run after them, the one
 * with the fewest pages left first (one not started yet counts as small until
 * its first page tells its size), so the day's requests finish as many
 * streams as they can. A backfill larger than what is left of the quota day
 * uses the rest and stops at its checkpoint (QuotaExhaustedError); the next
 * run on a later quota day resumes it from there without anyone's help.
 */
import { pagesLeft } from '../api/pager.ts';
import type { RestSourceConfig } from '../config-schema.ts';
import { loadState, type StreamState } from '../state/checkpoints.ts';
import type { SyncContext } from './context.ts';
import type { RestStream } from './streams/rest.ts';

export interface StreamPlan {
  stream: RestStream;
  phase: 'incremental' | 'backfill';
  /** Pages left in the open window, when the pager can tell; 0 for a backfill not started yet. */
  pagesLeft: number | null;
}

/** Pure: the phase and remaining size of a stream from its stored state. */
export function planStream(stream: RestStream, source: Pick<RestSourceConfig, 'fullRefresh'>, state: StreamState): StreamPlan {
  const full = stream.mode !== 'incremental' || source.fullRefresh.includes(stream.resource);
  const phase = !full && state.cursor !== null ? 'incremental' : 'backfill';
  const left = state.window?.paging ? pagesLeft(state.window.paging) : state.window ? null : 0;
  return { stream, phase, pagesLeft: left };
}

/** Pure: incremental streams in catalog order, then backfills by pages left (unknown last), catalog order on ties. */
export function orderPlans(plans: StreamPlan[]): RestStream[] {
  const size = (p: StreamPlan) => p.pagesLeft ?? Number.POSITIVE_INFINITY;
  const incremental = plans.filter((p) => p.phase === 'incremental');
  const backfills = plans
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => p.phase === 'backfill')
    .sort((a, b) => size(a.p) - size(b.p) || a.i - b.i)
    .map(({ p }) => p);
  return [...incremental, ...backfills].map((p) => p.stream);
}

export async function planOrder(ctx: Pick<SyncContext, 'pool'>, source: RestSourceConfig, streams: RestStream[]): Promise<RestStream[]> {
  const plans = await Promise.all(
    streams.map(async (s) => {
      // A damaged checkpoint is reported by the run itself; here it only sorts last.
      const state = await loadState(ctx.pool, source.name, s.resource).catch(() => null);
      return state ? planStream(s, source, state) : { stream: s, phase: 'backfill' as const, pagesLeft: null };
    }),
  );
  return orderPlans(plans);
}
