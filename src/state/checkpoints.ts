/**
 * Per source and resource: the cursor (end of the last completed window) and,
 * while a window is being read, the checkpoint inside it. Checkpoints are
 * validated when read: a damaged one stops the run with a clear message
 * instead of silently restarting or skipping.
 */
import { z } from 'zod';
import { PmsyncError } from '../errors.ts';
import type { Queryable } from '../db/pool.ts';
import { onlyStreams, type StreamPairs } from './stream-pairs.ts';
import type { PagingState } from '../api/pager.ts';

const count = z.number().int().min(0);

/** The pager's position (src/api/pager.ts); absent in checkpoints written before it existed. */
export const pagingState: z.ZodType<PagingState> = z.object({
  order: z.enum(['start', 'forward', 'backward']),
  nextPage: z.number().int().min(1),
  rowsPerPage: z.number().int().min(1).nullable(),
  lastTotal: count.nullable(),
  totalPages: count.nullable(),
  drift: z.boolean(),
  pagesRead: count,
  repairs: count,
  unrepaired: count,
  lastPage: z
    .object({ page: z.number().int().min(1), hash: z.string() })
    .nullable()
    .optional(),
});

export const windowCheckpoint = z.object({
  mode: z.enum(['incremental', 'full']),
  /** ISO instants of the window's ModifiedOn bounds; start null on a first or full pass. */
  start: z.iso.datetime().nullable(),
  end: z.iso.datetime(),
  /** Next page to request. */
  nextPage: z.number().int().min(1),
  /** Every filter the window's requests carry, fixed for the whole window. */
  filters: z.record(z.string(), z.string()),
  startedAt: z.iso.datetime(),
  /** DataTotalRows seen on the window's first page, when the server sends it. */
  totalRows: z.number().int().nullable().default(null),
  paging: pagingState.optional(),
  /** Database time when a full pass opened: rows not seen since are marked not_seen_since at its end. */
  seenSince: z.iso.datetime({ offset: true }).optional(),
  /** Stream-specific position (e.g. the Pro per-patient fan-out). */
  extra: z.record(z.string(), z.unknown()).optional(),
  /** The cursor the window started from (null on a first pass): the start of the hours it covers. */
  since: z.iso.datetime().nullable().optional(),
  /** Why the window is read (src/api/http.ts Purpose). */
  purpose: z.enum(['check', 'backfill', 'webhook', 'resync', 'full']).optional(),
  /** Changes counted so far by the window's pages, for the change model. */
  tally: z
    .object({
      bySlot: z.array(z.tuple([z.number().int(), z.number()])),
      undated: z.number(),
      dated: z.number().optional(),
      earliest: z.string().optional(),
    })
    .optional(),
});
export type WindowCheckpoint = z.infer<typeof windowCheckpoint>;

export interface StreamState {
  cursor: Date | null;
  window: WindowCheckpoint | null;
}

export async function loadState(db: Queryable, source: string, resource: string): Promise<StreamState> {
  const res = await db.query<{ cursor: Date | null; window: unknown }>(
    'SELECT cursor, "window" FROM pmsync.sync_state WHERE source = $1 AND resource = $2',
    [source, resource],
  );
  const row = res.rows[0];
  if (!row) return { cursor: null, window: null };
  if (row.window === null) return { cursor: row.cursor, window: null };
  const parsed = windowCheckpoint.safeParse(row.window);
  if (!parsed.success) {
    throw new PmsyncError(
      'BAD_RESPONSE',
      `The checkpoint of ${source}/${resource} in pmsync.sync_state is damaged (${parsed.error.issues[0]?.message}). Run "pmsync resync ${resource} --source ${source} --full" to start that stream over.`,
    );
  }
  return { cursor: row.cursor, window: parsed.data };
}

/**
 * Saves the position inside a window; called in the same transaction as the
 * page's rows. `at` (pmsync's clock) is when work left in the stream last moved.
 */
export async function saveWindow(db: Queryable, source: string, resource: string, window: WindowCheckpoint, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.sync_state (source, resource, "window", updated_at, progressed_at) VALUES ($1, $2, $3, now(), $4)
     ON CONFLICT (source, resource) DO UPDATE SET "window" = excluded."window", updated_at = now(), progressed_at = excluded.progressed_at`,
    [source, resource, JSON.stringify(window), at],
  );
}

/**
 * Ends a window: the cursor moves to its end and the checkpoint is cleared.
 * `backfillAt` is set when the window was a backfill (it then counts as the
 * stream's progress); a completed check leaves the progress time as it was.
 */
export async function completeWindow(
  db: Queryable,
  source: string,
  resource: string,
  cursor: Date,
  backfillAt: Date | null,
): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.sync_state AS s (source, resource, cursor, "window", updated_at, progressed_at) VALUES ($1, $2, $3, NULL, now(), $4)
     ON CONFLICT (source, resource) DO UPDATE SET cursor = excluded.cursor, "window" = NULL, updated_at = now(),
       progressed_at = coalesce(excluded.progressed_at, s.progressed_at)`,
    [source, resource, cursor, backfillAt],
  );
}

export interface StreamProgress {
  resource: string;
  /** End of the last completed window: every change before it was read. */
  cursor: Date | null;
  /** Whether a window is open (work is left in it). */
  open: boolean;
  /** When a unit of an open window or a backfill was last committed (pmsync's clock); null before the first. */
  progressedAt: Date | null;
}

/** Every stored stream of a source: its cursor, whether a window is open, and when it last moved. */
export async function readProgress(db: Queryable, source: string): Promise<StreamProgress[]> {
  const res = await db.query<{ resource: string; cursor: Date | null; open: boolean; progressed_at: Date | null }>(
    'SELECT resource, cursor, "window" IS NOT NULL AS open, progressed_at FROM pmsync.sync_state WHERE source = $1',
    [source],
  );
  return res.rows.map((r) => ({ resource: r.resource, cursor: r.cursor, open: r.open, progressedAt: r.progressed_at }));
}

export interface StoredCheckpoint {
  resource: string;
  cursor: Date | null;
  /** Whether a window is open (a damaged checkpoint counts as open: its run reports it). */
  open: boolean;
  /** The open window, when its checkpoint is readable. */
  window: WindowCheckpoint | null;
}

function storedOf(r: { resource: string; cursor: Date | null; window: unknown }): StoredCheckpoint {
  const parsed = r.window ? windowCheckpoint.safeParse(r.window) : null;
  return { resource: r.resource, cursor: r.cursor, open: r.window !== null, window: parsed?.success ? parsed.data : null };
}

/** Every stream's cursor and open window of a source, without failing on a damaged checkpoint. */
export async function readCheckpoints(db: Queryable, source: string): Promise<StoredCheckpoint[]> {
  const res = await db.query<{ resource: string; cursor: Date | null; window: unknown }>(
    'SELECT resource, cursor, "window" FROM pmsync.sync_state WHERE source = $1',
    [source],
  );
  return res.rows.map(storedOf);
}

/** The checkpoints of many sources with one query: source -> its streams' checkpoints. */
export async function readCheckpointsOf(db: Queryable, sources: string[], only?: StreamPairs): Promise<Map<string, StoredCheckpoint[]>> {
  const limit = onlyStreams(only, 'source', 'resource', 2);
  const res = await db.query<{ source: string; resource: string; cursor: Date | null; window: unknown }>(
    `SELECT source, resource, cursor, "window" FROM pmsync.sync_state WHERE source = ANY($1::text[])${limit.sql}`,
    [sources, ...limit.params],
  );
  const out = new Map<string, StoredCheckpoint[]>();
  for (const r of res.rows) {
    const list = out.get(r.source) ?? [];
    list.push(storedOf(r));
    out.set(r.source, list);
  }
  return out;
}
