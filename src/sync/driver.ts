/**
 * The one driver of every stream, whatever the API kind: Core and Subset
 * lists, Pro lists, Pro per-key fan-outs and availability captures.
 *
 * A run opens a window or resumes the one left unfinished, reads it as units
 * of work (a page, a batch of keys, an event type), and commits each unit's
 * rows with the checkpoint after it in one transaction, so a run killed at any
 * moment resumes at the next unit with nothing lost or doubled. The cursor
 * moves to the window's end only when the window completes. Between units the
 * run stops if a shutdown was asked for.
 *
 * What differs between streams is a Reader (src/sync/readers/): how a fresh
 * window opens, how it is read unit by unit, and what completing it writes.
 * What is the same lives here, once:
 * - the resume rule: an unfinished window is resumed unless the run re-reads
 *   from scratch (`full`) or from an instant (`since`);
 * - why a window is read: a resync is a resync; a resumed window and a first
 *   pass are backfills; otherwise the reader's or the caller's purpose, else a
 *   check;
 * - what a completed window teaches the change model.
 */
import type { Purpose } from '../api/http.ts';
import type { SourceConfig } from '../config/schema.ts';
import { withTransaction, type Queryable } from '../db/pool.ts';
import { addObservation, ChangeTally, WARM_START_DAYS, windowObservation } from '../state/change-model.ts';
import { completeWindow, loadState, saveWindow, type StreamState, type WindowCheckpoint } from '../state/checkpoints.ts';
import { closeAbandonedRuns, setFirstChange } from '../state/runs.ts';
import type { SyncContext } from './context.ts';
import type { DriftObserver } from './drift.ts';
import { prepareTable } from './page.ts';
import { skippedSummary, withRun, type RunOptions, type RunScope, type RunSummary } from './run-scope.ts';
import type { TableSettings } from './table-settings.ts';
import type { PageTotals } from '../db/table.ts';
import type { StreamBase } from './types.ts';
import { formatInZone, wallToInstant } from '../time.ts';

/**
 * How a stream's completed windows teach the change model:
 * - `modified-on`: by the ModifiedOn of the rows read, in the source's time
 *   zone; a first pass learns from the last WARM_START_DAYS of history;
 * - `changes`: records carry no modification time, so the rows a pass
 *   inserted or changed are spread over the hours since the previous pass; a
 *   first pass teaches nothing (everything is new to it).
 */
export type Learning = { from: 'modified-on'; timeZone: string } | { from: 'changes' };

/** A fresh window, as the reader opens it. */
export interface Opened {
  window: WindowCheckpoint;
  /** Why this window is read when neither a resync nor a backfill (e.g. a full refresh). */
  purpose?: Purpose;
}

/** What the driver gives a reader while a window is read. */
export interface UnitContext {
  run: RunScope;
  /** The table's settings (history, column overrides); null for streams that write no stream table. */
  settings: TableSettings | null;
  /** Watches the run's records for the table's schema-drift report. */
  observer: DriftObserver | undefined;
  /** Counts the changes the window's units write, when the window teaches the change model. */
  tally: ChangeTally | undefined;
}

/** One unit of work: written and checkpointed in one transaction. */
export interface Unit {
  /** Writes the unit's rows (and whatever else belongs with them). */
  write(tx: Queryable): Promise<PageTotals>;
  /** Whether the window is complete once this unit is written. */
  last: boolean;
  /** Moves the window's checkpoint past this unit (not called on the last unit). */
  advance(window: WindowCheckpoint): void;
  progress: { page: number; rows: number; totalPages?: number | null };
}

export interface Reader {
  resource: string;
  /** The stream whose table the units write: its settings are read and its drift observed. */
  stream?: StreamBase;
  /** The run mode reported when no window opens. */
  skippedMode: string;
  /** Whether and how completed windows teach the change model. */
  learning: Learning | null;
  /** A fresh window, or null when there is nothing to read now (the run is skipped). */
  open(state: StreamState): Promise<Opened | null>;
  /** The window's units from its checkpoint on. Ending without a last unit completes the window. */
  units(window: WindowCheckpoint, io: UnitContext): AsyncIterable<Unit>;
  /** What completing a window writes besides the cursor, in the same transaction (e.g. marking rows not seen). */
  complete?(tx: Queryable, window: WindowCheckpoint, settings: TableSettings | null): Promise<void>;
}

/** Runs one stream of one source through its reader. */
export async function drive(ctx: SyncContext, source: SourceConfig, reader: Reader, options: RunOptions): Promise<RunSummary> {
  const { resource } = reader;
  await closeAbandonedRuns(ctx.pool, source.name, resource);
  const settings = reader.stream ? await prepareTable(ctx.pool, ctx.logger, source, reader.stream) : null;
  const state = await loadState(ctx.pool, source.name, resource);
  const resync = options.purpose === 'resync';

  const resumed = state.window !== null && !options.full && !options.since;
  let window: WindowCheckpoint;
  if (resumed) {
    window = state.window!;
    // An unfinished window is read as a backfill, whoever left it.
    if (!resync) window.purpose = 'backfill';
  } else {
    const opened = await reader.open(state);
    if (!opened) return skippedSummary(source, resource, reader.skippedMode);
    window = {
      ...opened.window,
      // A window read from an arbitrary instant (a resync) teaches the change model nothing.
      since: options.since || resync || !reader.learning ? undefined : (state.cursor?.toISOString() ?? null),
      purpose: resync ? 'resync' : state.cursor === null ? 'backfill' : (opened.purpose ?? options.purpose ?? 'check'),
    };
  }
  const purpose: Purpose = resync ? 'resync' : (window.purpose ?? 'check');
  const learner = learnerFor(reader.learning, window);

  return withRun(ctx, source, resource, window, resumed, { ...options, purpose }, async (run) => {
    const observer = reader.stream && settings ? run.observe(reader.stream, settings) : undefined;
    const complete = async (tx: Queryable) => {
      await reader.complete?.(tx, window, settings);
      await completeWindow(tx, source.name, resource, new Date(window.end), purpose === 'backfill' ? ctx.now() : null);
      await learner?.complete(tx, source.name, resource);
      const first = learner?.firstChangeAt();
      if (first) await setFirstChange(tx, run.runId, first);
    };
    let completed = false;
    for await (const unit of reader.units(window, { run, settings, observer, tally: learner?.tally })) {
      await run.commit(async (tx) => {
        const totals = await unit.write(tx);
        if (unit.last) {
          await complete(tx);
        } else {
          unit.advance(window);
          if (learner) window.tally = learner.tally.toJSON();
          await saveWindow(tx, source.name, resource, window, ctx.now());
        }
        return totals;
      }, unit.progress);
      if (unit.last) completed = true;
      else run.checkAbort();
    }
    if (!completed) await withTransaction(ctx.pool, complete);
  });
}

interface Learner {
  tally: ChangeTally;
  complete(tx: Queryable, source: string, resource: string): Promise<void>;
  /** When the window's changes began, from their ModifiedOn; null when its rows carry none, or none changed. */
  firstChangeAt(): Date | null;
}

/** What a window teaches the change model when it completes; null when it teaches nothing. */
function learnerFor(learning: Learning | null, window: WindowCheckpoint): Learner | null {
  if (!learning || window.since === undefined) return null;
  const end = new Date(window.end);
  const firstPass = window.since === null;
  if (learning.from === 'changes' && firstPass) return null;
  const timeZone = learning.from === 'modified-on' ? learning.timeZone : 'UTC';
  const from = firstPass ? new Date(end.getTime() - WARM_START_DAYS * 86_400_000) : new Date(window.since!);
  const tally = ChangeTally.from(learning.from === 'modified-on' ? formatInZone(from, timeZone) : null, window.tally);
  return {
    tally,
    async complete(tx, source, resource) {
      const seen = windowObservation(tally, from, end, timeZone, firstPass);
      await addObservation(tx, source, resource, end, seen);
    },
    firstChangeAt: () => (tally.earliest === null || firstPass ? null : wallToInstant(tally.earliest, timeZone)),
  };
}
