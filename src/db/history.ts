/**
 * History mode (SCD type 2): `<table>_history` keeps every content version of
 * a record, valid from `valid_from` (inclusive) to `valid_to` (exclusive; null
 * while current), for the tables a source lists in `history`.
 *
 * Versions are written by their own statement right after the page upsert, in
 * its transaction, for the rows the upsert wrote. Not in the upsert statement
 * itself: a statement reads the snapshot taken when it started, so a history
 * CTE of an upsert that waited for another transaction's lock on the same row
 * would not see the version that transaction added, and would leave two
 * current versions or none. The statement after the upsert starts once this
 * transaction holds the rows' locks, so it sees every version committed
 * before, and nothing can slip in between.
 *
 * valid_from and valid_to are the database's transaction time (now(), the same
 * instant as the row's synced_at or not_seen_since): when pmsync learnt of the
 * version, which an incremental read sees minutes after the change.
 */
import type { TableDef } from './table.ts';
import { forgetHistoryTable, registerHistoryTable } from './history-tables.ts';
import type { Queryable } from './pool.ts';
import type { SqlQuery } from './upsert.ts';

const q = (ident: string) => `"${ident.replaceAll('"', '""')}"`;

export function historyTable(table: string): string {
  return `${table}_history`;
}

function versionColumns(table: TableDef): string[] {
  return [...Object.keys(table.columns), 'raw', 'content_hash', 'source_modified_at', 'fetched_at', 'run_id'].map(q);
}

/**
 * Versions for rows just written: the current version of a row whose content
 * hash changed is closed and a new one opened; a row without a current
 * version (new, or back after being marked not seen) gets one. Columns filled
 * from the request (not covered by the hash) are corrected in place.
 */
export function buildHistoryWrite(table: TableDef, source: string, ids: string[], compareColumns: string[] = []): SqlQuery {
  const h = q(historyTable(table.name));
  const cols = versionColumns(table);
  const anyId = `ANY($2::${table.idType}[])`;
  const fix = compareColumns.length
    ? `, fixed AS (
  UPDATE ${h} v SET ${compareColumns.map((c) => `${q(c)} = c.${q(c)}`).join(', ')}
  FROM cur c
  WHERE v.source = $1 AND v.id = ${anyId} AND v.is_current AND v.id = c.id AND v.content_hash = c.content_hash
    AND (${compareColumns.map((c) => `v.${q(c)} IS DISTINCT FROM c.${q(c)}`).join(' OR ')})
)`
    : '';
  // Every lookup names the ids (= ANY), so both tables are read through their
  // keys however large they grow. The new current version of a changed row is
  // inserted only once `closed` has closed the old one (the IN forces that
  // order), or the partial unique index on current versions would refuse it.
  const text = `WITH cur AS (
  SELECT t.id, ${cols.map((c) => `t.${c}`).join(', ')} FROM ${q(table.name)} t WHERE t.source = $1 AND t.id = ${anyId}
), open AS (
  SELECT v.id FROM ${h} v WHERE v.source = $1 AND v.id = ${anyId} AND v.is_current
), closed AS (
  UPDATE ${h} v SET valid_to = greatest(now(), v.valid_from), is_current = false
  FROM cur c
  WHERE v.source = $1 AND v.id = ${anyId} AND v.is_current AND v.id = c.id AND v.content_hash <> c.content_hash
  RETURNING v.id
)${fix}
INSERT INTO ${h} (source, id, valid_from, valid_to, is_current, ${cols.join(', ')})
SELECT $1, c.id, now(), NULL, true, ${cols.map((c) => `c.${c}`).join(', ')}
FROM cur c LEFT JOIN open o ON o.id = c.id
WHERE o.id IS NULL OR c.id IN (SELECT id FROM closed)`;
  return { text, values: [source, ids] };
}

/** Closes the current versions of rows just marked not seen. */
export async function closeVersions(db: Queryable, table: TableDef, source: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE ${q(historyTable(table.name))} SET valid_to = greatest(now(), valid_from), is_current = false
     WHERE source = $1 AND id = ANY($2::${table.idType}[]) AND is_current`,
    [source, ids],
  );
}

/**
 * Brings a table's history in line with the table when history is switched
 * on: every row without a matching current version gets one, valid from when
 * the row last changed (synced_at); versions whose row changed or went away
 * while history was off are closed; rows already marked not seen get a closed
 * version if they never had one.
 */
export function buildHistoryCatchUp(table: TableDef, source: string): SqlQuery {
  const h = q(historyTable(table.name));
  const cols = versionColumns(table);
  const text = `WITH closed AS (
  UPDATE ${h} v SET valid_to = greatest(v.valid_from, coalesce(t.not_seen_since, t.synced_at)), is_current = false
  FROM ${q(table.name)} t
  WHERE v.source = $1 AND t.source = $1 AND t.id = v.id AND v.is_current
    AND (v.content_hash <> t.content_hash OR t.not_seen_since IS NOT NULL)
  RETURNING v.id, v.valid_to
)
INSERT INTO ${h} (source, id, valid_from, valid_to, is_current, ${cols.join(', ')})
SELECT $1, t.id, greatest(t.synced_at, c.valid_to),
       CASE WHEN t.not_seen_since IS NOT NULL THEN greatest(t.not_seen_since, t.synced_at, c.valid_to) END,
       t.not_seen_since IS NULL, ${cols.map((col) => `t.${col}`).join(', ')}
FROM ${q(table.name)} t LEFT JOIN closed c ON c.id = t.id
WHERE t.source = $1
  AND CASE WHEN t.not_seen_since IS NULL
           THEN c.id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM ${h} v WHERE v.source = $1 AND v.id = t.id AND v.is_current)
           ELSE NOT EXISTS (SELECT 1 FROM ${h} v WHERE v.source = $1 AND v.id = t.id) END`;
  return { text, values: [source] };
}

/**
 * Records whether a source keeps a table's history, catching the history up
 * when it is switched on (in the caller's transaction). Switching it off
 * forgets the table, so switching it on again catches up what changed
 * meanwhile. Returns the versions written when it caught up, else null.
 */
export async function syncHistoryState(db: Queryable, table: TableDef, source: string, enabled: boolean): Promise<number | null> {
  if (!enabled) {
    await forgetHistoryTable(db, source, table.name);
    return null;
  }
  if (!(await registerHistoryTable(db, source, table.name))) return null;
  return (await db.query(buildHistoryCatchUp(table, source))).rowCount ?? 0;
}

/** A source's versions in a table's history, and how many of its records have an older version. */
export async function countVersions(db: Queryable, table: string, source: string): Promise<{ versions: number; changed: number }> {
  const res = await db.query<{ versions: number; changed: number }>(
    `SELECT count(*)::int AS versions, count(DISTINCT id) FILTER (WHERE NOT is_current)::int AS changed FROM "${historyTable(table)}" WHERE source = $1`,
    [source],
  );
  return res.rows[0] ?? { versions: 0, changed: 0 };
}
