/**
 * pmsync.source_health: whether each source fails as a whole and until when
 * serve leaves it alone (the policy is src/scheduler/source-failures.ts).
 * Shared by every replica; each change is one statement, so replicas
 * recording at once neither lose a failure nor count one twice. Times come
 * from pmsync's clock (an injected one in tests), never from the database's.
 *
 * - consecutive_failures: failures since the last success, counted once per
 *   pause: a run that fails while the source is already paused (it started
 *   before the pause) updates the last error but neither counts nor extends it.
 * - paused_until: no run or record refresh is sent to the source before it.
 * - failing_since: the first failure since the last success; null while healthy.
 * - last_error: the redacted message of the last failure (never a secret).
 * - reported_failing: whether the failing state was logged, so one replica
 *   says it once when it starts and once when it ends.
 */
import type { Queryable } from '../db/pool.ts';

export interface SourceHealth {
  source: string;
  consecutiveFailures: number;
  /** auth, server, timeout or network (src/scheduler/source-failures.ts). */
  lastFailureKind: string | null;
  lastErrorCode: string | null;
  lastError: string | null;
  lastFailureAt: Date | null;
  failingSince: Date | null;
  lastSuccessAt: Date | null;
  pausedUntil: Date | null;
  reportedFailing: boolean;
}

interface Row {
  source: string;
  consecutive_failures: number;
  last_failure_kind: string | null;
  last_error_code: string | null;
  last_error: string | null;
  last_failure_at: Date | null;
  failing_since: Date | null;
  last_success_at: Date | null;
  paused_until: Date | null;
  reported_failing: boolean;
}

function fromRow(r: Row): SourceHealth {
  return {
    source: r.source,
    consecutiveFailures: r.consecutive_failures,
    lastFailureKind: r.last_failure_kind,
    lastErrorCode: r.last_error_code,
    lastError: r.last_error,
    lastFailureAt: r.last_failure_at,
    failingSince: r.failing_since,
    lastSuccessAt: r.last_success_at,
    pausedUntil: r.paused_until,
    reportedFailing: r.reported_failing,
  };
}

const COLUMNS = `source, consecutive_failures, last_failure_kind, last_error_code, last_error, last_failure_at,
  failing_since, last_success_at, paused_until, reported_failing`;

/** Every source's health, by source name (sources never recorded are absent: healthy). */
export async function loadSourceHealth(db: Queryable): Promise<Map<string, SourceHealth>> {
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM pmsync.source_health`);
  return new Map(res.rows.map((r) => [r.source, fromRow(r)]));
}

/**
 * The health of the named sources (absent: never recorded, healthy). The
 * scheduler reads the sources it reads again at a tick, not every row: each
 * run's success writes its source's row, so a fleet has one per source.
 */
export async function loadSourceHealthOf(db: Queryable, sources: readonly string[]): Promise<Map<string, SourceHealth>> {
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM pmsync.source_health WHERE source = ANY($1::text[])`, [sources]);
  return new Map(res.rows.map((r) => [r.source, fromRow(r)]));
}

/** One source's health; null when it was never recorded (healthy). */
export async function readSourceHealth(db: Queryable, source: string): Promise<SourceHealth | null> {
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM pmsync.source_health WHERE source = $1`, [source]);
  return res.rows[0] ? fromRow(res.rows[0]) : null;
}

/** Until when the source is paused, or null when it is not at `now`. */
export async function sourcePausedUntil(db: Queryable, source: string, now: Date): Promise<Date | null> {
  const res = await db.query<{ paused_until: Date }>(
    'SELECT paused_until FROM pmsync.source_health WHERE source = $1 AND paused_until > $2',
    [source, now],
  );
  return res.rows[0]?.paused_until ?? null;
}

export interface FailureRecord {
  source: string;
  kind: string;
  code: string;
  /** Already redacted. */
  message: string;
  at: Date;
  /** The pause after the first failure, and the longest one. */
  baseMs: number;
  capMs: number;
}

/**
 * Records a failure: unless the source is already paused at `at`, one more
 * consecutive failure and a pause of base * 2^(n-1), at most cap. Returns the row.
 */
export async function recordSourceFailure(db: Queryable, f: FailureRecord): Promise<SourceHealth> {
  const res = await db.query<Row>(
    `INSERT INTO pmsync.source_health AS h (source, consecutive_failures, last_failure_kind, last_error_code, last_error, last_failure_at,
       failing_since, paused_until, updated_at)
     VALUES ($1, 1, $2, $3, $4, $5, $5, $5::timestamptz + least($6::float8, $7::float8) * interval '1 millisecond', now())
     ON CONFLICT (source) DO UPDATE SET
       consecutive_failures = CASE WHEN h.paused_until > $5 THEN h.consecutive_failures ELSE h.consecutive_failures + 1 END,
       paused_until = CASE WHEN h.paused_until > $5 THEN h.paused_until
         ELSE $5::timestamptz + least($7::float8, $6::float8 * power(2::float8, least(h.consecutive_failures, 30))) * interval '1 millisecond' END,
       last_failure_kind = $2, last_error_code = $3, last_error = $4, last_failure_at = $5,
       failing_since = coalesce(h.failing_since, $5), updated_at = now()
     RETURNING ${COLUMNS}`,
    [f.source, f.kind, f.code, f.message, f.at, f.baseMs, f.capMs],
  );
  return fromRow(res.rows[0]!);
}

/** Records a success: the failures and the pause end; the last error is kept for the record. */
export async function recordSourceSuccess(db: Queryable, source: string, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.source_health AS h (source, last_success_at, updated_at) VALUES ($1, $2, now())
     ON CONFLICT (source) DO UPDATE SET consecutive_failures = 0, failing_since = NULL, paused_until = NULL,
       last_success_at = greatest(h.last_success_at, $2), updated_at = now()`,
    [source, at],
  );
}

/**
 * Ends the source's pause at once (its credentials or address were changed,
 * so the next run should try them now); its count of failures is kept, so a
 * change that did not fix it is paused again as before. True if it was paused.
 */
export async function liftSourcePause(db: Queryable, source: string): Promise<boolean> {
  const res = await db.query(
    `UPDATE pmsync.source_health SET paused_until = NULL, updated_at = now() WHERE source = $1 AND paused_until IS NOT NULL`,
    [source],
  );
  return (res.rowCount ?? 0) > 0;
}

/**
 * Notes that the source's failing state (failing or not) was said; true for
 * the one process whose statement changed it, so the state is logged once.
 */
export async function markReported(db: Queryable, source: string, failing: boolean): Promise<boolean> {
  const res = await db.query(
    `UPDATE pmsync.source_health SET reported_failing = $2, updated_at = now()
     WHERE source = $1 AND reported_failing <> $2 AND (failing_since IS NOT NULL) = $2`,
    [source, failing],
  );
  return (res.rowCount ?? 0) > 0;
}
