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
import type { ColumnType, MappedRow, TableDef } from '../db/table.ts';
import type { PersonalKind } from '../privacy/rules.ts';

export type SyncMode = 'incremental' | 'full';

/** What the column declarations say about one typed column, for column policies. */
export interface ColumnFacts {
  type: ColumnType;
  /** Raw paths the value comes from, dotted for nested fields (`Email`, `patient.firstName`). */
  reads: string[];
  personal?: PersonalKind;
  /** Filled from the request (a fan-out's key): no policy applies to it. */
  filledByRequest?: boolean;
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

/** A typed column read from another raw field than pmsync's default (a source's `columns`, src/sync/table-settings.ts). */
export interface ColumnOverride {
  column: string;
  /** The raw field pmsync reads by default. */
  defaultField: string;
  /** The raw field the operator configured instead. */
  field: string;
}
