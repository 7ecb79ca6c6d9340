/** Run history in pmsync.runs: one row per run of one stream for one source. */
import type { Queryable } from '../db/pool.ts';
import { storableText } from '../db/storable.ts';
import type { PageTotals } from '../db/table.ts';
import { onlyStreams, type StreamPairs } from './stream-pairs.ts';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'quota_exhausted' | 'interrupted';

/** A row of pmsync.runs. Each read below returns the columns it needs of it (a Pick). */
export interface RunRow {
  id: number;
  source: string;
  resource: string;
  /** incremental or full. */
  mode: string;
  /** Why the run was made: check, backfill, webhook, full or resync. */
  purpose: string | null;
  status: RunStatus;
  /** The window it read; null for runs that read no window. */
  windowStart: Date | null;
  windowEnd: Date | null;
  /** The database's clock. */
  startedAt: Date;
  endedAt: Date | null;
  pages: number;
  requests: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  /** The error's stable code. */
  errorCode: string | null;
  /** It may quote what a server sent. */
  errorMessage: string | null;
}

export async function startRun(
  db: Queryable,
  run: { source: string; resource: string; mode: string; purpose?: string | null; windowStart: Date | null; windowEnd: Date | null },
): Promise<number> {
  const res = await db.query<{ id: number }>(
    `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, window_start, window_end) VALUES ($1, $2, $3, $4, 'running', $5, $6) RETURNING id`,
    [run.source, run.resource, run.mode, run.purpose ?? null, run.windowStart, run.windowEnd],
  );
  return res.rows[0]!.id;
}

/** Adds one page's counts; called inside the page's transaction. */
export async function addPage(db: Queryable, runId: number, totals: PageTotals, requests: number): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET pages = pages + 1, requests = requests + $2, inserted = inserted + $3, updated = updated + $4,
       unchanged = unchanged + $5, rejected = rejected + $6 WHERE id = $1`,
    [runId, requests, totals.inserted, totals.updated, totals.unchanged, totals.rejected],
  );
}

/** When the run's window found its first change (the earliest ModifiedOn among the rows it changed). */
export async function setFirstChange(db: Queryable, runId: number, at: Date): Promise<void> {
  await db.query(`UPDATE pmsync.runs SET first_change_at = $2 WHERE id = $1`, [runId, at]);
}

/** Error messages may quote what a server sent; a NUL in one must not fail the run's last write. */
export async function finishRun(
  db: Queryable,
  runId: number,
  status: RunStatus,
  extra: { requests?: number; errorCode?: string; errorMessage?: string } = {},
): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET status = $2, ended_at = now(), requests = requests + $3, error_code = $4, error_message = $5 WHERE id = $1`,
    [
      runId,
      status,
      extra.requests ?? 0,
      extra.errorCode ?? null,
      extra.errorMessage === undefined ? null : storableText(extra.errorMessage),
    ],
  );
}

/** Runs left "running" by a process that died are closed as interrupted. */
export async function closeAbandonedRuns(db: Queryable, source: string, resource: string): Promise<void> {
  await db.query(
    `UPDATE pmsync.runs SET status = 'interrupted', ended_at = now(), error_code = 'ABANDONED', error_message = 'the process ended before the run finished; resumed from its checkpoint'
     WHERE source = $1 AND resource = $2 AND status = 'running'`,
    [source, resource],
  );
}

/** When the last successful full pass of a stream started, if there was one. */
export async function lastFullPass(db: Queryable, source: string, resource: string): Promise<Date | null> {
  const res = await db.query<{ at: Date | null }>(
    `SELECT max(started_at) AS at FROM pmsync.runs WHERE source = $1 AND resource = $2 AND mode = 'full' AND status = 'succeeded'`,
    [source, resource],
  );
  return res.rows[0]?.at ?? null;
}

/** Rows each stream's checks found changed in windows that ended at or after `since` (pmsync's clock). */
export async function changesFoundSince(db: Queryable, source: string, since: Date): Promise<Map<string, number>> {
  const res = await db.query<{ resource: string; n: number }>(
    `SELECT resource, sum(inserted + updated)::int AS n FROM pmsync.runs
     WHERE source = $1 AND status = 'succeeded' AND window_end >= $2 AND purpose IN ('check', 'webhook', 'full')
     GROUP BY resource`,
    [source, since],
  );
  return new Map(res.rows.map((r) => [r.resource, r.n]));
}

/**
 * The windows each stream's recent runs completed, newest first, at most
 * `perStream` of them ending at or after `since`: their instants and the rows
 * they changed. The rest of a check read as a backfill (longer than
 * checkPages) counts too; a first pass, reaching back a day or more, does not.
 */
export async function recentWindows(
  db: Queryable,
  source: string,
  since: Date,
  perStream: number,
): Promise<Map<string, Array<{ from: number; to: number; changes: number; firstChangeAt?: number }>>> {
  const res = await db.query<{ resource: string; window_start: Date; window_end: Date; n: number; first_change_at: Date | null }>(
    `SELECT resource, window_start, window_end, n, first_change_at FROM (
       SELECT resource, window_start, window_end, inserted + updated AS n, first_change_at,
              row_number() OVER (PARTITION BY resource ORDER BY window_end DESC, id DESC) AS k
       FROM pmsync.runs
       WHERE source = $1 AND status = 'succeeded' AND window_start IS NOT NULL AND window_end >= $2
         AND (purpose IN ('check', 'webhook') OR (purpose = 'backfill' AND window_end - window_start < interval '1 day'))
     ) r WHERE k <= $3`,
    [source, since, perStream],
  );
  const out = new Map<string, Array<{ from: number; to: number; changes: number; firstChangeAt?: number }>>();
  for (const r of res.rows) {
    const list = out.get(r.resource) ?? [];
    const w = { from: r.window_start.getTime(), to: r.window_end.getTime(), changes: r.n };
    list.push(r.first_change_at ? { ...w, firstChangeAt: r.first_change_at.getTime() } : w);
    out.set(r.resource, list);
  }
  return out;
}

/**
 * Each source's own start of the runs a query reads, and the earliest of them. The earliest is a bound of its own: it
 * lets the runs be found by (source, window_end), the recent ones alone. Each source's own start is looked up by its
 * name in a JSON object (`starts`, a query's parameter), a filter on each run rather than a join: joined to the
 * sources, the plan depended on the table's statistics (on runs analyzed while nearly empty, every run was compared
 * with every source, 0.9 s for 2,000 sources instead of 35 ms).
 */
function sourceStarts(since: ReadonlyArray<{ source: string; since: Date }>): { earliest: Date; starts: string } {
  let earliest = since[0]!.since;
  const starts: Record<string, string> = {};
  for (const s of since) {
    if (s.since < earliest) earliest = s.since;
    starts[s.source] = s.since.toISOString();
  }
  return { earliest, starts: JSON.stringify(starts) };
}

/** changesFoundSince for many sources, each from its own instant (its quota day's start): source -> resource -> rows. */
export async function changesFoundOf(
  db: Queryable,
  since: ReadonlyArray<{ source: string; since: Date }>,
  only?: StreamPairs,
): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>(since.map((s) => [s.source, new Map()]));
  if (since.length === 0) return out;
  const { earliest, starts } = sourceStarts(since);
  const limit = onlyStreams(only, 'r.source', 'r.resource', 4);
  const res = await db.query<{ source: string; resource: string; n: number }>(
    `SELECT r.source, r.resource, sum(r.inserted + r.updated)::int AS n
     FROM pmsync.runs r
     WHERE r.source = ANY($1::text[]) AND r.window_end >= $2 AND r.window_end >= ($3::jsonb ->> r.source)::timestamptz
       AND r.status = 'succeeded' AND r.purpose IN ('check', 'webhook', 'full')${limit.sql}
     GROUP BY r.source, r.resource`,
    [since.map((s) => s.source), earliest, starts, ...limit.params],
  );
  for (const r of res.rows) out.get(r.source)?.set(r.resource, r.n);
  return out;
}

/** What a stream's checks read of its practice's day (atWorkSinceOf). */
export interface AtWork {
  /** The local midnight it was read from. */
  day: Date;
  /** The earliest first change since then of a window that found `minChanges` changes or more; null: none did. */
  since: Date | null;
  /** The changes its checks found in windows ending since then. */
  found: number;
}

/**
 * For each stream of many sources, what its checks read of the practice's day since the source's local midnight:
 * when they first found it at work (the earliest first change, by its ModifiedOn, runs.first_change_at, of a window
 * that found at least `minChanges` changes), and the changes they found. Streams with no window since are left out.
 */
export async function atWorkSinceOf(
  db: Queryable,
  since: ReadonlyArray<{ source: string; since: Date }>,
  minChanges: number,
  only?: StreamPairs,
): Promise<Map<string, Map<string, AtWork>>> {
  const out = new Map<string, Map<string, AtWork>>(since.map((s) => [s.source, new Map()]));
  if (since.length === 0) return out;
  const { earliest, starts } = sourceStarts(since);
  const dayOf = new Map(since.map((s) => [s.source, s.since]));
  const limit = onlyStreams(only, 'r.source', 'r.resource', 5);
  const res = await db.query<{ source: string; resource: string; first: Date | null; found: number }>(
    `SELECT r.source, r.resource,
            min(r.first_change_at) FILTER (WHERE r.first_change_at >= ($3::jsonb ->> r.source)::timestamptz AND r.inserted + r.updated >= $4) AS first,
            coalesce(sum(r.inserted + r.updated) FILTER (WHERE r.purpose IN ('check', 'webhook', 'full')), 0)::int AS found
     FROM pmsync.runs r
     WHERE r.source = ANY($1::text[]) AND r.window_end >= $2 AND r.window_end >= ($3::jsonb ->> r.source)::timestamptz
       AND r.status = 'succeeded' AND r.window_start IS NOT NULL${limit.sql}
     GROUP BY r.source, r.resource`,
    [since.map((s) => s.source), earliest, starts, minChanges, ...limit.params],
  );
  for (const r of res.rows) out.get(r.source)?.set(r.resource, { day: dayOf.get(r.source)!, since: r.first, found: r.found });
  return out;
}

/** recentWindows for many sources with one query: source -> resource -> windows, newest first. */
export async function recentWindowsOf(
  db: Queryable,
  sources: readonly string[],
  since: Date,
  perStream: number,
  only?: StreamPairs,
): Promise<Map<string, Map<string, Array<{ from: number; to: number; changes: number; firstChangeAt?: number }>>>> {
  const out = new Map<string, Map<string, Array<{ from: number; to: number; changes: number; firstChangeAt?: number }>>>(
    sources.map((s) => [s, new Map()]),
  );
  if (sources.length === 0) return out;
  const limit = onlyStreams(only, 'source', 'resource', 4);
  const res = await db.query<{
    source: string;
    resource: string;
    window_start: Date;
    window_end: Date;
    n: number;
    first_change_at: Date | null;
  }>(
    `SELECT source, resource, window_start, window_end, n, first_change_at FROM (
       SELECT source, resource, window_start, window_end, inserted + updated AS n, first_change_at,
              row_number() OVER (PARTITION BY source, resource ORDER BY window_end DESC, id DESC) AS k
       FROM pmsync.runs
       WHERE source = ANY($1::text[]) AND status = 'succeeded' AND window_start IS NOT NULL AND window_end >= $2
         AND (purpose IN ('check', 'webhook') OR (purpose = 'backfill' AND window_end - window_start < interval '1 day'))${limit.sql}
     ) r WHERE k <= $3
     ORDER BY source, resource, window_end DESC, k`,
    [sources, since, perStream, ...limit.params],
  );
  for (const r of res.rows) {
    const bySource = out.get(r.source)!;
    const list = bySource.get(r.resource) ?? [];
    const w = { from: r.window_start.getTime(), to: r.window_end.getTime(), changes: r.n };
    list.push(r.first_change_at ? { ...w, firstChangeAt: r.first_change_at.getTime() } : w);
    bySource.set(r.resource, list);
  }
  return out;
}

/** How many of a stream's latest checks price its next one (the scheduler, pinned schedules, the cron's bound). */
export const CHECK_COST_RUNS = 5;

/** Average requests of each stream's last `runs` completed checks and full passes. */
export async function recentCheckCosts(db: Queryable, source: string, runs: number): Promise<Map<string, number>> {
  const res = await db.query<{ resource: string; cost: number }>(
    `SELECT resource, avg(requests)::float8 AS cost FROM (
       SELECT resource, requests, row_number() OVER (PARTITION BY resource ORDER BY id DESC) AS n
       FROM pmsync.runs WHERE source = $1 AND status = 'succeeded' AND requests > 0 AND (purpose IN ('check', 'webhook', 'full') OR mode = 'full')
     ) r WHERE n <= $2 GROUP BY resource`,
    [source, runs],
  );
  return new Map(res.rows.map((r) => [r.resource, r.cost]));
}

/**
 * recentCheckCosts for many streams with one query: "source/resource" ->
 * average requests. Each stream's latest runs are found through its index
 * (newest start first: a stream's runs never overlap, so that is id order).
 */
export async function recentCheckCostsOf(
  db: Queryable,
  streams: ReadonlyArray<{ source: string; resource: string }>,
  runs: number,
): Promise<Map<string, number>> {
  const res = await db.query<{ source: string; resource: string; cost: number }>(
    `SELECT k.source, k.resource, avg(r.requests)::float8 AS cost
     FROM unnest($1::text[], $2::text[]) AS k(source, resource)
     CROSS JOIN LATERAL (
       SELECT requests FROM pmsync.runs
       WHERE source = k.source AND resource = k.resource AND status = 'succeeded' AND requests > 0 AND (purpose IN ('check', 'webhook', 'full') OR mode = 'full')
       ORDER BY started_at DESC, id DESC LIMIT $3
     ) r
     GROUP BY k.source, k.resource`,
    [streams.map((s) => s.source), streams.map((s) => s.resource), runs],
  );
  return new Map(res.rows.map((r) => [`${r.source}/${r.resource}`, r.cost]));
}

/** When each stream ("source/resource") last finished a run successfully. */
export async function lastSuccesses(db: Queryable): Promise<Map<string, Date>> {
  const res = await db.query<{ key: string; at: Date }>(
    `SELECT source || '/' || resource AS key, max(ended_at) AS at FROM pmsync.runs WHERE status = 'succeeded' GROUP BY 1`,
  );
  return new Map(res.rows.map((r) => [r.key, r.at]));
}

export type LastRun = Pick<
  RunRow,
  'status' | 'startedAt' | 'endedAt' | 'requests' | 'inserted' | 'updated' | 'unchanged' | 'rejected' | 'errorMessage'
>;

/**
 * The latest run of a stream, whatever its outcome. Newest start first, not
 * highest id: a stream's runs never overlap, so that is the same run, and it
 * is found through the stream's index instead of walking the whole history
 * backwards (160 ms a stream with 1.5 million runs recorded).
 */
export async function lastRun(db: Queryable, source: string, resource: string): Promise<LastRun | null> {
  const res = await db.query<LastRun>(
    `SELECT status, started_at AS "startedAt", ended_at AS "endedAt", requests, inserted, updated, unchanged, rejected, error_message AS "errorMessage"
     FROM pmsync.runs WHERE source = $1 AND resource = $2 ORDER BY started_at DESC, id DESC LIMIT 1`,
    [source, resource],
  );
  return res.rows[0] ?? null;
}

/** A finished run; its errorMessage is cut to OUTCOME_MESSAGE_CHARS characters. */
export type RunOutcome = Pick<RunRow, 'status' | 'startedAt' | 'endedAt' | 'errorCode' | 'errorMessage'>;

/** An error message read for a summary is cut here: the rest stays in pmsync.runs (`pmsync runs`). */
const OUTCOME_MESSAGE_CHARS = 500;

/**
 * The latest `perStream` finished runs of each of many streams, newest first,
 * with one query (each stream's runs are found through its index, however
 * long the history): "source/resource" -> outcomes. Streams never run are absent.
 */
export async function recentOutcomes(
  db: Queryable,
  streams: Array<{ source: string; resource: string }>,
  perStream: number,
): Promise<Map<string, RunOutcome[]>> {
  const res = await db.query<RunOutcome & { source: string; resource: string }>(
    `SELECT k.source, k.resource, r.status, r.started_at AS "startedAt", r.ended_at AS "endedAt", r.error_code AS "errorCode",
            left(r.error_message, $4) AS "errorMessage"
     FROM unnest($1::text[], $2::text[]) AS k(source, resource)
     CROSS JOIN LATERAL (
       SELECT id, status, started_at, ended_at, error_code, error_message FROM pmsync.runs
       WHERE source = k.source AND resource = k.resource AND status <> 'running'
       ORDER BY started_at DESC, id DESC LIMIT $3
     ) r
     ORDER BY k.source, k.resource, r.started_at DESC, r.id DESC`,
    [streams.map((s) => s.source), streams.map((s) => s.resource), perStream, OUTCOME_MESSAGE_CHARS],
  );
  const out = new Map<string, RunOutcome[]>();
  for (const { source, resource, ...outcome } of res.rows) {
    const key = `${source}/${resource}`;
    const list = out.get(key) ?? [];
    list.push(outcome);
    out.set(key, list);
  }
  return out;
}

/** When a run started (database clock), if it exists. */
export async function runStartedAt(db: Queryable, runId: number): Promise<Date | null> {
  const res = await db.query<{ at: Date }>('SELECT started_at AS at FROM pmsync.runs WHERE id = $1', [runId]);
  return res.rows[0]?.at ?? null;
}

/** What `pmsync runs` lists of each run. */
export type ListedRun = Pick<
  RunRow,
  | 'id'
  | 'source'
  | 'resource'
  | 'mode'
  | 'status'
  | 'startedAt'
  | 'endedAt'
  | 'pages'
  | 'requests'
  | 'inserted'
  | 'updated'
  | 'unchanged'
  | 'rejected'
  | 'errorCode'
  | 'errorMessage'
>;

/** The most recent runs, newest first, optionally narrowed. */
export async function listRuns(
  db: Queryable,
  opts: { limit: number; source?: string; resource?: string; status?: string },
): Promise<ListedRun[]> {
  const res = await db.query<ListedRun>(
    `SELECT id, source, resource, mode, status, started_at AS "startedAt", ended_at AS "endedAt", pages, requests, inserted, updated, unchanged, rejected,
            error_code AS "errorCode", error_message AS "errorMessage"
     FROM pmsync.runs
     WHERE ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR resource = $3) AND ($4::text IS NULL OR status = $4)
     ORDER BY id DESC LIMIT $1`,
    [opts.limit, opts.source ?? null, opts.resource ?? null, opts.status ?? null],
  );
  return res.rows;
}

/** A run as the status page shows it: its message may quote what a server sent, so it is not read here. */
export type RecentRun = Pick<
  RunRow,
  'resource' | 'status' | 'purpose' | 'startedAt' | 'endedAt' | 'pages' | 'requests' | 'rejected' | 'errorCode'
> & {
  /** Rows inserted or updated. */
  written: number;
};

/** The latest `perStream` runs of every stream of a source, newest first. */
export async function recentRuns(db: Queryable, source: string, perStream: number): Promise<Map<string, RecentRun[]>> {
  const res = await db.query<RecentRun>(
    `SELECT resource, status, purpose, started_at AS "startedAt", ended_at AS "endedAt", pages, requests, written, rejected, error_code AS "errorCode" FROM (
       SELECT resource, status, purpose, started_at, ended_at, pages, requests, inserted + updated AS written, rejected, error_code,
              row_number() OVER (PARTITION BY resource ORDER BY id DESC) AS n
       FROM pmsync.runs WHERE source = $1
     ) r WHERE n <= $2 ORDER BY resource, n`,
    [source, perStream],
  );
  const out = new Map<string, RecentRun[]>();
  for (const r of res.rows) {
    const list = out.get(r.resource) ?? [];
    list.push(r);
    out.set(r.resource, list);
  }
  return out;
}
