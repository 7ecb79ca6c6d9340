/**
 * The order in which a source's streams spend the day's requests.
 *
 * Streams that are caught up (an incremental stream with a cursor) run first:
 * each costs a page or two and keeps analysts' tables fresh. Backfills (a
 * first pass with no cursor yet, or a full refresh) run after them, so a
 * backfill larger than what is left of the quota day uses the rest and stops
 * at its checkpoint (QuotaExhaustedError); the next run on a later quota day
 * resumes it from there without anyone's help. Within each group the
 * catalog's order is kept (small catalogs first).
 */
import type { RestSourceConfig } from '../config.ts';
import { loadState } from '../state/checkpoints.ts';
import type { SyncContext } from './context.ts';
import type { RestStream } from './streams/rest.ts';

export type StreamPhase = 'incremental' | 'backfill';

/** Pure: a stream is a backfill until its first pass completed, and always when it is read whole. */
export function phaseOf(stream: RestStream, source: Pick<RestSourceConfig, 'fullRefresh'>, cursor: Date | null): StreamPhase {
  if (stream.mode !== 'incremental' || source.fullRefresh.includes(stream.resource)) return 'backfill';
  return cursor === null ? 'backfill' : 'incremental';
}

export async function planOrder(ctx: Pick<SyncContext, 'pool'>, source: RestSourceConfig, streams: RestStream[]): Promise<RestStream[]> {
  const phases = await Promise.all(
    streams.map(async (s) => {
      // A damaged checkpoint is reported by the run itself; here it only sorts last.
      const cursor = await loadState(ctx.pool, source.name, s.resource).then((st) => st.cursor, () => null);
      return phaseOf(s, source, cursor);
    }),
  );
  return [...streams.filter((_, i) => phases[i] === 'incremental'), ...streams.filter((_, i) => phases[i] === 'backfill')];
}
