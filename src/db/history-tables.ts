/**
 * pmsync.history_tables: which tables of which source keep history versions
 * (src/db/history.ts). A table is registered when its history is caught up,
 * and forgotten when history is switched off.
 */
import type { Queryable } from './pool.ts';

/** Registers a table's history; false when it was registered already. */
export async function registerHistoryTable(db: Queryable, source: string, table: string): Promise<boolean> {
  const res = await db.query('INSERT INTO pmsync.history_tables (source, table_name) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    source,
    table,
  ]);
  return (res.rowCount ?? 0) > 0;
}

export async function forgetHistoryTable(db: Queryable, source: string, table: string): Promise<void> {
  await db.query('DELETE FROM pmsync.history_tables WHERE source = $1 AND table_name = $2', [source, table]);
}
