/**
 * Glossary: the words used everywhere in pmsync.
 *
 * - source: one configured account of one API kind (core, subset or pro), named
 *   by the operator; every stored row carries its source name.
 * - resource: a kind of record the API lists (customers, orders, ...).
 * - stream: pmsync's definition of how one resource is read and stored: path,
 *   paging style, cursor and filters, and its table's columns, each declared
 *   once with the raw field it is read from (src/sync/columns.ts), from which
 *   the raw schema, the mapper and the Prisma model follow. One file each
 *   under src/sync/streams/.
 * - page: one list request and the records it returned.
 * - window: the fixed [start, end] ModifiedOn range one incremental pass reads.
 *   Its end never moves while it is being paged.
 * - cursor: the end of the last completed window; the next window starts at the
 *   cursor minus the overlap.
 * - checkpoint: the stored position inside a window (window bounds and the next
 *   page). It commits in the same transaction as the rows of the page before it.
 * - run: one execution of one stream for one source, recorded in pmsync.runs.
 * - quota day: the gateway key's daily request budget period.
 */
import type { z } from 'zod';
import type { PersonalKind } from '../privacy/rules.ts';

export type SyncMode = 'incremental' | 'full';

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

/** What the column declarations say about one typed column, for column policies. */
export interface ColumnFacts {
  type: ColumnType;
  /** Raw paths the value comes from, dotted for nested fields (`Email`, `patient.firstName`). */
  reads: string[];
  personal?: PersonalKind;
  /** Filled from the request (a fan-out's key): no policy applies to it. */
  filledByRequest?: boolean;
}

/** What a mapper returns for one raw record. */
export interface MappedRow {
  id: string;
  /** When the record was last modified at the source, if the record says so. */
  sourceModifiedAt: string | null;
  columns: Record<string, unknown>;
}

export interface StreamBase<Raw extends Record<string, unknown> = Record<string, unknown>> {
  /** Resource name used on the command line and in state (e.g. "customers"). */
  resource: string;
  /** Passthrough schema of one raw record: unknown fields are kept. */
  raw: z.ZodType<Raw>;
  /** Pure raw-to-row mapping. */
  map: (raw: Raw) => MappedRow;
  /**
   * The top-level raw field each typed column is read from, for the columns
   * read from exactly one (columns read from nested objects, or filled from
   * the request, are left out). Schema-drift reports and the per-source
   * `columns` overrides work on these.
   */
  fields: Record<string, string>;
  table: TableDef;
  /** Per typed column: its raw paths and whether it holds personal data (src/sync/columns.ts). */
  columnFacts: Record<string, ColumnFacts>;
}

/** Counts reported by one page upsert. */
export interface UpsertCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

export interface PageTotals extends UpsertCounts {
  rejected: number;
}
