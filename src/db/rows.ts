/**
 * Row bookkeeping on the stream tables that is not an upsert: marking rows
 * the API no longer returns, and the database clock those marks compare with.
 * Rows are never deleted by a sync; a later pass that sees them again clears
 * the mark.
 */
import { closeVersions, historyTable } from './history.ts';
import type { Queryable } from './pool.ts';
import type { TableDef } from './table.ts';

/**
 * After a complete full pass: rows the API did not return in it (not seen
 * since the pass started) are marked with not_seen_since.
 */
export async function markNotSeen(
  tx: Queryable,
  table: TableDef,
  source: string,
  passStartedAt: Date | string,
  history: boolean,
): Promise<void> {
  await markRowsNotSeen(tx, table, source, 'last_seen_at < $2', [passStartedAt], history);
}

/**
 * Marks the current rows matching `condition` (in which $1 is the source and
 * `values` follow) not seen; with history, their current versions close in
 * the same transaction (the caller's).
 */
export async function markRowsNotSeen(
  db: Queryable,
  table: TableDef,
  source: string,
  condition: string,
  values: unknown[],
  history: boolean,
): Promise<void> {
  const text = `UPDATE "${table.name}" SET not_seen_since = now() WHERE source = $1 AND not_seen_since IS NULL AND (${condition})`;
  if (!history) {
    await db.query(text, [source, ...values]);
    return;
  }
  const gone = await db.query<{ id: string }>(`${text} RETURNING id::text AS id`, [source, ...values]);
  await closeVersions(
    db,
    table,
    source,
    gone.rows.map((r) => r.id),
  );
}

/** Whether current rows of a source have no value in `column` (e.g. rows stored before a key was recorded with them). */
export async function currentRowsLack(db: Queryable, table: TableDef, source: string, column: string): Promise<boolean> {
  const res = await db.query(`SELECT 1 FROM "${table.name}" WHERE source = $1 AND "${column}" IS NULL AND not_seen_since IS NULL LIMIT 1`, [
    source,
  ]);
  return res.rows.length > 0;
}

/**
 * The database's clock, to millisecond precision. last_seen_at and synced_at
 * are stamped by the database, so bounds compared with them (the start of a
 * full pass) come from the same clock, not pmsync's (which may differ, or be
 * injected in tests).
 */
export async function dbNow(db: Queryable): Promise<Date> {
  const res = await db.query<{ now: Date }>("SELECT date_trunc('milliseconds', now()) AS now");
  return res.rows[0]!.now;
}

/** Rows of a source in a stream table, whether seen lately or not. */
export async function countRows(db: Queryable, table: { name: string }, source: string): Promise<number> {
  const res = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table.name}" WHERE source = $1`, [source]);
  return res.rows[0]?.n ?? 0;
}

/** Rows of a source marked not seen at or after `since`. */
export async function countMarkedNotSeenSince(db: Queryable, table: { name: string }, source: string, since: Date): Promise<number> {
  const res = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table.name}" WHERE source = $1 AND not_seen_since >= $2`, [
    source,
    since,
  ]);
  return res.rows[0]?.n ?? 0;
}

/** Deletes a source's rows from a stream table and its history table (the demo's reset). */
export async function deleteSourceRows(db: Queryable, table: { name: string }, source: string): Promise<void> {
  await db.query(`DELETE FROM "${table.name}" WHERE source = $1`, [source]);
  await db.query(`DELETE FROM "${historyTable(table.name)}" WHERE source = $1`, [source]);
}
