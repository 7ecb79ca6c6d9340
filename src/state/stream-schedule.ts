/**
 * pmsync.stream_schedule: what the scheduler remembers of each stream it runs
 * by budget, shared by every serve replica. Times come from pmsync's clock (an
 * injected one in tests and benchmarks), never from the database's.
 *
 * - last_fire_at: when a run was last dispatched. Dispatching is one
 *   conditional UPDATE that compares it with the value the deciding replica
 *   read, so of several replicas deciding at once exactly one dispatches.
 * - last_done_at: when that run ended (succeeded or not); a fire later than it
 *   is in flight.
 * - last_check_at: start of the last run that completed a window: every change
 *   before it (minus the lag) has been read.
 * - notified_until: webhook notifications received up to then are covered by a
 *   dispatched check, whose window reaches the latest of them.
 * - paused_until: the stream's share of the quota is used up until then.
 * - warning: the last freshness warning said about the stream, so it is said once.
 */
import type { Queryable } from '../db/pool.ts';
import { onlyStreams, type StreamPairs } from './stream-pairs.ts';

export interface StreamScheduleRow {
  resource: string;
  lastFireAt: Date | null;
  lastFirePurpose: string | null;
  lastFireReason: string | null;
  lastFireBy: string | null;
  lastDoneAt: Date | null;
  lastCheckAt: Date | null;
  lastOutcome: string | null;
  notifiedUntil: Date | null;
  pausedUntil: Date | null;
  warning: string | null;
}

interface ScheduleRecord {
  source: string;
  resource: string;
  last_fire_at: Date | null;
  last_fire_purpose: string | null;
  last_fire_reason: string | null;
  last_fire_by: string | null;
  last_done_at: Date | null;
  last_check_at: Date | null;
  last_outcome: string | null;
  notified_until: Date | null;
  paused_until: Date | null;
  warning: string | null;
}

/** The columns a row is read from (not updated_at: the scheduler reads these for every stream it plans, and each timestamp costs a parse). */
const SCHEDULE_COLUMNS =
  'source, resource, last_fire_at, last_fire_purpose, last_fire_reason, last_fire_by, last_done_at, last_check_at, last_outcome, notified_until, paused_until, warning';

function rowOf(r: ScheduleRecord): StreamScheduleRow {
  return {
    resource: r.resource,
    lastFireAt: r.last_fire_at,
    lastFirePurpose: r.last_fire_purpose,
    lastFireReason: r.last_fire_reason,
    lastFireBy: r.last_fire_by,
    lastDoneAt: r.last_done_at,
    lastCheckAt: r.last_check_at,
    lastOutcome: r.last_outcome,
    notifiedUntil: r.notified_until,
    pausedUntil: r.paused_until,
    warning: r.warning,
  };
}

export async function loadStreamSchedules(db: Queryable, source: string): Promise<Map<string, StreamScheduleRow>> {
  const res = await db.query<ScheduleRecord>(`SELECT ${SCHEDULE_COLUMNS} FROM pmsync.stream_schedule WHERE source = $1`, [source]);
  return new Map(res.rows.map((r) => [r.resource, rowOf(r)]));
}

/** The rows of many sources with one query: source -> resource -> row (with `only`, those streams' rows alone). */
export async function loadStreamSchedulesOf(
  db: Queryable,
  sources: string[],
  only?: StreamPairs,
): Promise<Map<string, Map<string, StreamScheduleRow>>> {
  const limit = onlyStreams(only, 'source', 'resource', 2);
  const res = await db.query<ScheduleRecord>(
    `SELECT ${SCHEDULE_COLUMNS} FROM pmsync.stream_schedule WHERE source = ANY($1::text[])${limit.sql}`,
    [sources, ...limit.params],
  );
  const out = new Map<string, Map<string, StreamScheduleRow>>();
  for (const r of res.rows) {
    const rows = out.get(r.source) ?? new Map<string, StreamScheduleRow>();
    rows.set(r.resource, rowOf(r));
    out.set(r.source, rows);
  }
  return out;
}

/**
 * A stream's webhook notifications as read at one instant, in a form that
 * holds for later instants too (src/scheduler/observe.ts derives the plan's
 * inputs at any instant from it): what is pending (not covered by a
 * dispatched check), and when the latest one came.
 */
export interface NotifiedReading {
  resource: string;
  /** Notifications of the lookback not yet covered by a check. */
  pending: number;
  /** When the oldest of them was received. */
  oldest: Date | null;
  /** The sum of their receipt instants (epoch ms): their summed age at t is pending * t - this. */
  receivedSumMs: number;
  latestEvent: Date | null;
  /** The latest notification received in the lookback, covered or not (null: none). */
  latestReceived: Date | null;
  /** Notifications received since the start of the source's quota day. */
  today: number;
  /**
   * The first notification of today's latest run of them (notifications no more than RUN_GAP_HOURS apart) and the
   * minutes of that run in which some came (null, 0: none today): when the practice's day began, a stray change of
   * the night aside, and how often notifications come. A check reads every waiting change at once, so a batch of
   * them in one minute (an import, a bulk edit) is one arrival, not a pace.
   */
  runStart: Date | null;
  runCount: number;
}

/** Notifications further apart than this belong to different runs of a practice's activity (NotifiedReading.runStart). */
export const RUN_GAP_HOURS = 3;

/**
 * The notifications of many sources' streams received in (since, at], each
 * source's `today` counted from its own quota day's start and its run from its
 * own local midnight (`localDayStart`, the practice's day, which a quota day
 * reset at another hour would cut): source -> resource -> reading.
 */
export async function notifiedOf(
  db: Queryable,
  sources: ReadonlyArray<{ source: string; dayStart: Date; localDayStart: Date }>,
  since: Date,
  at: Date,
  only?: StreamPairs,
): Promise<Map<string, Map<string, NotifiedReading>>> {
  const out = new Map<string, Map<string, NotifiedReading>>(sources.map((s) => [s.source, new Map()]));
  if (sources.length === 0) return out;
  const limit = onlyStreams(only, 'e.source', 'e.resource', 6);
  const res = await db.query<{
    source: string;
    resource: string;
    pending: number;
    oldest: Date | null;
    received_sum_ms: number | null;
    latest_event: Date | null;
    latest_received: Date | null;
    today: number;
    run_start: Date | null;
    run_count: number | null;
  }>(
    `WITH g AS (
       SELECT e.source, e.resource, k.local_day_start,
              count(*) FILTER (WHERE e.received_at > coalesce(s.notified_until, '-infinity'))::int AS pending,
              min(e.received_at) FILTER (WHERE e.received_at > coalesce(s.notified_until, '-infinity')) AS oldest,
              sum(extract(epoch FROM e.received_at) * 1000) FILTER (WHERE e.received_at > coalesce(s.notified_until, '-infinity'))::float8 AS received_sum_ms,
              max(e.event_timestamp) FILTER (WHERE e.received_at > coalesce(s.notified_until, '-infinity')) AS latest_event,
              max(e.received_at) AS latest_received,
              count(*) FILTER (WHERE e.received_at >= k.day_start)::int AS today
       FROM unnest($1::text[], $2::timestamptz[], $5::timestamptz[]) AS k(source, day_start, local_day_start)
       JOIN pmsync.webhook_events e ON e.source = k.source
       LEFT JOIN pmsync.stream_schedule s ON s.source = e.source AND s.resource = e.resource
       WHERE e.outcome = 'notified' AND e.received_at > $3 AND e.received_at <= $4${limit.sql}
       GROUP BY e.source, e.resource, k.local_day_start
     )
     SELECT g.*, r.run_start, r.run_count
     FROM g LEFT JOIN LATERAL (
       SELECT t.run_start, count(DISTINCT date_trunc('minute', t.received_at)) FILTER (WHERE t.received_at >= t.run_start)::int AS run_count
       FROM (SELECT x.received_at,
                    max(x.received_at) FILTER (WHERE x.gap IS NULL OR x.gap > ${RUN_GAP_HOURS} * interval '1 hour') OVER () AS run_start
             FROM (SELECT w.received_at, w.received_at - lag(w.received_at) OVER (ORDER BY w.received_at) AS gap
                   FROM pmsync.webhook_events w
                   WHERE w.source = g.source AND w.resource = g.resource AND w.outcome = 'notified'
                     AND w.received_at >= g.local_day_start AND w.received_at > $3 AND w.received_at <= $4) x) t
       GROUP BY t.run_start
     ) r ON true`,
    [sources.map((s) => s.source), sources.map((s) => s.dayStart), since, at, sources.map((s) => s.localDayStart), ...limit.params],
  );
  for (const r of res.rows) {
    out.get(r.source)?.set(r.resource, {
      resource: r.resource,
      pending: r.pending,
      oldest: r.oldest,
      receivedSumMs: r.received_sum_ms ?? 0,
      latestEvent: r.latest_event,
      latestReceived: r.latest_received,
      today: r.today,
      runStart: r.run_start,
      runCount: r.run_count ?? 0,
    });
  }
  return out;
}

/** Of `streams` (`source/resource`), those whose last dispatched run has no recorded end (last_fire_at after last_done_at). */
export async function unendedFires(db: Queryable, streams: string[]): Promise<Set<string>> {
  if (streams.length === 0) return new Set();
  const res = await db.query<{ key: string }>(
    `SELECT source || '/' || resource AS key FROM pmsync.stream_schedule
     WHERE source || '/' || resource = ANY($1::text[]) AND last_fire_at IS NOT NULL AND (last_done_at IS NULL OR last_done_at < last_fire_at)`,
    [streams],
  );
  return new Set(res.rows.map((r) => r.key));
}

export interface Claim {
  source: string;
  resource: string;
  /** last_fire_at as the deciding process read it (null: never fired). */
  seen: Date | null;
  at: Date;
  purpose: string;
  reason: string;
  holder: string;
  /** Notifications received up to here are covered by this run (webhook-triggered checks). */
  notifiedUntil?: Date;
  /**
   * The advisory lock the claimer must still hold for the claim to count (a
   * serve replica's scheduling shard, held by backend `pid`): a replica whose
   * shard passed to another while it was deciding dispatches nothing of it.
   */
  fence?: { lockClass: number; key: number; pid: number };
}

/**
 * Claims a dispatch: true for exactly one of any number of processes claiming
 * the same stream from the same `seen` value, and only while the claimer holds
 * its fence.
 */
export async function claimDispatch(db: Queryable, c: Claim): Promise<boolean> {
  return (await claimDispatches(db, [c]))[0]!;
}

/** Claims written by one statement: a tick's claims cost one round trip per this many. */
export const CLAIM_BATCH = 500;

/**
 * Claims many dispatches, CLAIM_BATCH a statement: for each claim, whether it
 * was won (as claimDispatch decides it). A stream claimed twice in one call
 * wins at most its first claim: the second started from a `seen` the first
 * has replaced. Each statement locks the rows it claims in (source, resource)
 * order before it writes them, so two processes claiming overlapping streams
 * at once wait for one another instead of deadlocking; a claim is won against
 * the row as it stands once locked (another process's claim that committed
 * meanwhile has moved `last_fire_at`, so this one loses). A stream with no row
 * yet is won by whichever process inserts it first.
 */
export async function claimDispatches(db: Queryable, claims: readonly Claim[]): Promise<boolean[]> {
  const won = claims.map(() => false);
  const first = new Map<string, number>();
  claims.forEach((c, i) => {
    const key = `${c.source}/${c.resource}`;
    if (!first.has(key)) first.set(key, i);
  });
  const order = [...first.values()].sort((a, b) => {
    const x = claims[a]!;
    const y = claims[b]!;
    return x.source < y.source ? -1 : x.source > y.source ? 1 : x.resource < y.resource ? -1 : x.resource > y.resource ? 1 : 0;
  });
  const claimed = new Set<string>();
  for (let i = 0; i < order.length; i += CLAIM_BATCH) {
    const batch = order.slice(i, i + CLAIM_BATCH).map((j) => claims[j]!);
    const col = <T>(f: (c: Claim) => T) => batch.map(f);
    const res = await db.query<{ source: string; resource: string }>(
      `WITH x AS MATERIALIZED (
         SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
                              $8::timestamptz[], $9::int[], $10::int[], $11::int[])
           AS x(source, resource, at, purpose, reason, holder, notified_until, seen, pid, lock_class, lock_key)),
       held AS MATERIALIZED (SELECT l.classid, l.objid, l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2),
       fenced AS MATERIALIZED (
         SELECT x.* FROM x
         WHERE x.pid IS NULL OR EXISTS (SELECT 1 FROM held h WHERE h.classid = x.lock_class::oid AND h.objid = x.lock_key::oid AND h.pid = x.pid)),
       locked AS MATERIALIZED (
         SELECT s.source, s.resource, s.last_fire_at FROM pmsync.stream_schedule s JOIN fenced f ON f.source = s.source AND f.resource = s.resource
         ORDER BY s.source, s.resource FOR UPDATE OF s),
       updated AS (
         UPDATE pmsync.stream_schedule s SET last_fire_at = f.at, last_fire_purpose = f.purpose, last_fire_reason = f.reason, last_fire_by = f.holder,
           notified_until = coalesce(f.notified_until, s.notified_until), updated_at = now()
         FROM fenced f JOIN locked k ON k.source = f.source AND k.resource = f.resource
         WHERE s.source = f.source AND s.resource = f.resource AND k.last_fire_at IS NOT DISTINCT FROM f.seen
         RETURNING s.source, s.resource),
       inserted AS (
         INSERT INTO pmsync.stream_schedule (source, resource, last_fire_at, last_fire_purpose, last_fire_reason, last_fire_by, notified_until, updated_at)
         SELECT f.source, f.resource, f.at, f.purpose, f.reason, f.holder, f.notified_until, now() FROM fenced f
         WHERE NOT EXISTS (SELECT 1 FROM locked k WHERE k.source = f.source AND k.resource = f.resource)
         ORDER BY f.source, f.resource
         ON CONFLICT (source, resource) DO NOTHING
         RETURNING source, resource)
       SELECT source, resource FROM updated UNION ALL SELECT source, resource FROM inserted`,
      [
        col((c) => c.source),
        col((c) => c.resource),
        col((c) => c.at),
        col((c) => c.purpose),
        col((c) => c.reason),
        col((c) => c.holder),
        col((c) => c.notifiedUntil ?? null),
        col((c) => c.seen),
        col((c) => c.fence?.pid ?? null),
        col((c) => c.fence?.lockClass ?? 0),
        col((c) => c.fence?.key ?? 0),
      ],
    );
    for (const r of res.rows) claimed.add(`${r.source}/${r.resource}`);
  }
  for (const [key, j] of first) if (claimed.has(key)) won[j] = true;
  return won;
}

export interface RunEnd {
  source: string;
  resource: string;
  /** The fire this run belongs to: a later fire's bookkeeping is left alone. */
  firedAt: Date;
  at: Date;
  /** succeeded, failed, locked (another process had it), quota (held until pausedUntil), paused (its source was paused: not run). */
  outcome: 'succeeded' | 'failed' | 'locked' | 'quota' | 'paused';
  /** Set when the run completed a window: its start. */
  checkedAt?: Date;
  pausedUntil?: Date;
  /** A failed webhook-triggered check hands its notifications back. */
  notifiedUntil?: Date | null;
}

export async function recordRunEnd(db: Queryable, e: RunEnd): Promise<void> {
  await db.query(
    `UPDATE pmsync.stream_schedule SET last_done_at = $4, last_outcome = $5,
       last_check_at = CASE WHEN $6::timestamptz IS NOT NULL THEN greatest(coalesce(last_check_at, $6::timestamptz), $6::timestamptz) ELSE last_check_at END,
       paused_until = $7, notified_until = CASE WHEN $8 THEN $9::timestamptz ELSE notified_until END, updated_at = now()
     WHERE source = $1 AND resource = $2 AND last_fire_at = $3`,
    [
      e.source,
      e.resource,
      e.firedAt,
      e.at,
      e.outcome,
      e.checkedAt ?? null,
      e.pausedUntil ?? null,
      e.notifiedUntil !== undefined,
      e.notifiedUntil ?? null,
    ],
  );
}

/**
 * Notes a check a process ran outside serve's dispatch (`pmsync sync`, a
 * resync): serve then knows the stream is fresh.
 */
export async function recordOutsideCheck(db: Queryable, source: string, resource: string, checkedAt: Date): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.stream_schedule AS s (source, resource, last_check_at, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (source, resource) DO UPDATE SET last_check_at = greatest(coalesce(s.last_check_at, $3), $3), updated_at = now()`,
    [source, resource, checkedAt],
  );
}

/** Stores a stream's freshness warning; true when it changed (so it is said once, by one process). */
export async function setWarning(db: Queryable, source: string, resource: string, warning: string | null): Promise<boolean> {
  const res = await db.query(
    `INSERT INTO pmsync.stream_schedule AS s (source, resource, warning, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (source, resource) DO UPDATE SET warning = $3, updated_at = now() WHERE s.warning IS DISTINCT FROM $3`,
    [source, resource, warning],
  );
  return (res.rowCount ?? 0) > 0;
}
