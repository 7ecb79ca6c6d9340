/**
 * The shape of a stream table, as db/ writes it: its typed columns and their
 * PostgreSQL types, the columns pmsync keeps beside them, what a mapper hands
 * the page upsert for one record, and what a page write counts. The streams
 * declare these (src/sync/columns.ts) and fill them; the words are in the
 * glossary of src/sync/types.ts.
 */
import type { PersonalKind } from '../privacy/rules.ts';

/** PostgreSQL column types a mapper may produce. */
export type ColumnType = 'text' | 'boolean' | 'date' | 'timestamp' | 'numeric' | 'integer' | 'bigint' | 'jsonb';

export interface TableDef {
  /** Table name in the public schema (snake_case, plural). */
  name: string;
  /** Typed columns besides the shared metadata columns, in insert order. */
  columns: Record<string, ColumnType>;
  /** Type of the id column: text for opaque Core ids, bigint for Pro integer ids. */
  idType: 'text' | 'bigint';
  /** Indexes besides the primary key, as column lists (each led by source). */
  indexes?: string[][];
  /** Columns pmsync keeps about a row that no record fills (not written by the page upsert, not in history). */
  managed?: Record<string, ManagedColumn>;
  /** The typed columns holding personal data, with what they hold (marked in the docs). */
  personal?: Record<string, PersonalKind>;
  /** Per typed column: its one-line meaning and the API fields it is read from (COMMENTs, docs/tables.md, dbt sources). */
  docs?: Record<string, ColumnDoc>;
}

export interface ColumnDoc {
  /** The column's one-line meaning, as its stream file declares it. */
  doc?: string;
  /** The API fields it is read from, dotted for nested ones. */
  reads: string[];
}

export interface ManagedColumn {
  type: ColumnType | 'timestamptz';
  /** Shown in docs/tables.md. */
  doc?: string;
  /**
   * Holds a copy of the row's content_hash (a "read at this version" mark):
   * kept in step when a stricter column policy rewrites the row, so the
   * rewrite alone does not make the row look changed.
   */
  copiesContentHash?: boolean;
}

/** What a mapper returns for one raw record. */
export interface MappedRow {
  id: string;
  /** When the record was last modified at the source, if the record says so. */
  sourceModifiedAt: string | null;
  columns: Record<string, unknown>;
}

/** Counts reported by one page upsert. */
export interface UpsertCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

/** Counts of one page write: the upsert's, and the records set aside (quarantined). */
export interface PageTotals extends UpsertCounts {
  rejected: number;
}
