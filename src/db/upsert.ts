/**
 * The page upsert: one statement writes a whole page.
 *
 * Rows travel as one jsonb array parameter expanded by jsonb_to_recordset, so a
 * page of 100 records is one round trip and one plan. The content hash is
 * md5 of the raw jsonb text (jsonb's text form is canonical: key order and
 * spacing never change it). A row is rewritten only when its content changed
 * (or it had been marked not seen, or a column filled from the request rather
 * than raw differs), and never by an older copy: the incoming
 * fetch must be at least as recent as the stored one, and its source
 * modification time, when both have one, must not be older.
 */
import type { ColumnType, MappedRow, TableDef, UpsertCounts } from './table.ts';
import type { Queryable } from './pool.ts';

export interface SqlQuery {
  text: string;
  values: unknown[];
}

const RECORDSET_TYPE: Record<ColumnType, string> = {
  text: 'text',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamp',
  numeric: 'numeric',
  integer: 'integer',
  bigint: 'bigint',
  jsonb: 'jsonb',
};

const q = (ident: string) => `"${ident.replaceAll('"', '""')}"`;

export interface UpsertMeta {
  source: string;
  runId: number | null;
  /** When the request that returned these rows was sent. */
  fetchedAt: Date;
  /** Full passes mark every returned row as seen, changed or not (for reconciliation). */
  markSeen?: boolean;
  /**
   * Typed columns not derived from raw (filled from the request), so the
   * content hash does not cover them: a row whose value differs is rewritten
   * even when raw is unchanged.
   */
  compareColumns?: string[];
  /** Report the ids of the rows written (inserted or changed), for the history writer. */
  returnIds?: boolean;
}

export function buildPageUpsert(table: TableDef, rows: Array<MappedRow & { raw: unknown }>, meta: UpsertMeta): SqlQuery {
  const cols = Object.keys(table.columns);
  const recordset = [
    `id ${table.idType}`,
    'raw jsonb',
    'source_modified_at timestamp',
    ...cols.map((c) => `${q(c)} ${RECORDSET_TYPE[table.columns[c]!]}`),
  ].join(', ');
  const payload = rows.map((r) => ({ id: r.id, raw: r.raw, source_modified_at: r.sourceModifiedAt, ...r.columns }));
  const insertCols = [
    'source',
    'id',
    ...cols.map(q),
    'raw',
    'content_hash',
    'source_modified_at',
    'fetched_at',
    'first_seen_at',
    'synced_at',
    'last_seen_at',
    'run_id',
    'not_seen_since',
  ];
  const updateCols = [
    ...cols.map(q),
    'raw',
    'content_hash',
    'source_modified_at',
    'fetched_at',
    'synced_at',
    'last_seen_at',
    'run_id',
    'not_seen_since',
  ];
  const text = `WITH input AS (
  SELECT r.*, md5(r.raw::text) AS content_hash FROM jsonb_to_recordset($1::jsonb) AS r(${recordset})
), written AS (
  INSERT INTO ${q(table.name)} AS t (${insertCols.join(', ')})
  SELECT $2, i.id, ${cols.map((c) => `i.${q(c)}`).join(', ')}${cols.length ? ', ' : ''}i.raw, i.content_hash, i.source_modified_at, $3, now(), now(), now(), $4, NULL
  FROM input i
  ON CONFLICT (source, id) DO UPDATE SET ${updateCols.map((c) => `${c} = excluded.${c}`).join(', ')}
  WHERE (t.content_hash IS DISTINCT FROM excluded.content_hash OR t.not_seen_since IS NOT NULL${(meta.compareColumns ?? []).map((c) => ` OR t.${q(c)} IS DISTINCT FROM excluded.${q(c)}`).join('')})
    AND t.fetched_at <= excluded.fetched_at
    AND (t.source_modified_at IS NULL OR excluded.source_modified_at IS NULL OR t.source_modified_at <= excluded.source_modified_at)
  RETURNING t.id, (xmax = 0) AS inserted
)${
    meta.markSeen
      ? `, seen AS (
  UPDATE ${q(table.name)} AS t SET last_seen_at = now()
  FROM input i
  WHERE t.source = $2 AND t.id = i.id AND t.last_seen_at < $3
    AND NOT EXISTS (SELECT 1 FROM written w WHERE w.id = t.id)
)`
      : ''
  }
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated${meta.returnIds ? ", coalesce(array_agg(id::text), '{}') AS ids" : ''} FROM written`;
  return { text, values: [JSON.stringify(payload), meta.source, meta.fetchedAt, meta.runId] };
}

/** Keeps the last copy of each id: a page listing one record twice must not fail the statement. */
export function dedupeById<T extends { id: string }>(rows: T[]): T[] {
  const byId = new Map<string, T>();
  for (const r of rows) {
    byId.delete(r.id);
    byId.set(r.id, r);
  }
  return [...byId.values()];
}

export interface UpsertOutcome extends UpsertCounts {
  /** Rows PostgreSQL refused (a value it could not store), with the reason. */
  failed: Array<{ row: MappedRow & { raw: unknown }; reason: string }>;
  /** Ids of the rows inserted or changed, when `returnIds` asked for them. */
  written: string[];
}

type Written = { inserted: number; updated: number; ids?: string[] };

/**
 * Writes one page inside the caller's transaction. If PostgreSQL refuses a value
 * (data exception, SQLSTATE class 22), each row is retried under a savepoint so
 * only the offending rows are set aside and the rest of the page lands.
 */
export async function upsertPage(
  db: Queryable,
  table: TableDef,
  rows: Array<MappedRow & { raw: unknown }>,
  meta: UpsertMeta,
): Promise<UpsertOutcome> {
  const unique = dedupeById(rows);
  if (unique.length === 0) return { inserted: 0, updated: 0, unchanged: 0, failed: [], written: [] };
  await db.query('SAVEPOINT page_upsert');
  try {
    const res = await db.query<Written>(buildPageUpsert(table, unique, meta));
    await db.query('RELEASE SAVEPOINT page_upsert');
    const { inserted, updated, ids } = res.rows[0] ?? { inserted: 0, updated: 0 };
    return { inserted, updated, unchanged: unique.length - inserted - updated, failed: [], written: ids ?? [] };
  } catch (err) {
    await db.query('ROLLBACK TO SAVEPOINT page_upsert');
    if (!isDataException(err)) throw err;
  }
  const outcome: UpsertOutcome = { inserted: 0, updated: 0, unchanged: 0, failed: [], written: [] };
  for (const row of unique) {
    await db.query('SAVEPOINT row_upsert');
    try {
      const res = await db.query<Written>(buildPageUpsert(table, [row], meta));
      await db.query('RELEASE SAVEPOINT row_upsert');
      const r = res.rows[0] ?? { inserted: 0, updated: 0 };
      outcome.inserted += r.inserted;
      outcome.updated += r.updated;
      outcome.unchanged += 1 - r.inserted - r.updated;
      outcome.written.push(...(r.ids ?? []));
    } catch (err) {
      await db.query('ROLLBACK TO SAVEPOINT row_upsert');
      if (!isDataException(err)) throw err;
      outcome.failed.push({ row, reason: `database refused a value: ${(err as Error).message}` });
    }
  }
  return outcome;
}

function isDataException(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('22');
}
