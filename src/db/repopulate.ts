/**
 * Re-derives typed columns from raw in SQL, for `pmsync repopulate`: after a
 * `columns` override changes where a column is read from, the rows already
 * stored (and their history versions) are corrected without a single API
 * request. One UPDATE per table, touching only rows whose value changes.
 *
 * Each column type has a conversion function (migration
 * 20261123110000_schema_drift) that derives the value as the mappers do; a
 * value the mappers would refuse becomes null here (a sync would have set the
 * whole record aside instead).
 */
import type { ColumnType, TableDef } from './table.ts';
import type { Queryable } from './pool.ts';
import type { SqlQuery } from './upsert.ts';

const FROM_RAW: Record<ColumnType, string> = {
  text: 'pmsync.raw_text',
  boolean: 'pmsync.raw_boolean',
  date: 'pmsync.raw_date',
  timestamp: 'pmsync.raw_timestamp',
  numeric: 'pmsync.raw_numeric',
  integer: 'pmsync.raw_integer',
  bigint: 'pmsync.raw_bigint',
  jsonb: 'pmsync.raw_jsonb',
};

const q = (ident: string) => `"${ident.replaceAll('"', '""')}"`;

/** `fields`: typed column to the raw field it is read from. Field names travel as parameters. */
export function buildRepopulate(tableName: string, table: TableDef, fields: Record<string, string>, source: string): SqlQuery {
  const entries = Object.entries(fields).filter(([column]) => table.columns[column] !== undefined);
  const values: unknown[] = [source];
  const derived = entries.map(([column, field]) => {
    values.push(field);
    return { column: q(column), expr: `${FROM_RAW[table.columns[column]!]}(raw -> $${values.length}::text)` };
  });
  if (derived.length === 0) return { text: 'SELECT 0', values: [] };
  const text = `UPDATE ${q(tableName)} SET ${derived.map((d) => `${d.column} = ${d.expr}`).join(', ')}
WHERE source = $1 AND (${derived.map((d) => `${d.column} IS DISTINCT FROM ${d.expr}`).join(' OR ')})`;
  return { text, values };
}

/** Repopulates a table and its history; returns the rows and versions changed. */
export async function repopulateTable(
  db: Queryable,
  table: TableDef,
  fields: Record<string, string>,
  source: string,
): Promise<{ rows: number; versions: number }> {
  const rows = await db.query(buildRepopulate(table.name, table, fields, source));
  const versions = await db.query(buildRepopulate(`${table.name}_history`, table, fields, source));
  return { rows: rows.rowCount ?? 0, versions: versions.rowCount ?? 0 };
}
