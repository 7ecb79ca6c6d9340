/**
 * The shape of a Core/Subset stream: a Page/Rows list of one resource.
 */
import type { RestSourceConfig } from '../../config-schema.ts';
import { CORE_IDENTITY, deriveColumns, type ColumnsDef } from '../columns.ts';
import type { StreamBase, SyncMode } from '../types.ts';

export type RestVariant = 'core' | 'subset';

export interface RestStream<Raw extends Record<string, unknown> = Record<string, unknown>> extends StreamBase<Raw> {
  kind: 'rest';
  /** List path below the base URL, e.g. "/customers". */
  path: string;
  /** The raw field holding the record's opaque id. */
  idField: string;
  /** Incremental by ModifiedOnStart/ModifiedOnEnd, or full refresh. */
  mode: SyncMode;
  /** API variants that serve this list. */
  variants: RestVariant[];
  /** Filters fixed when a window opens, besides ModifiedOn (e.g. appointments' date range). */
  windowFilters?: (source: RestSourceConfig, runStart: Date) => Record<string, string>;
  /** Path of the single-record endpoint, where the API has one (webhook refreshes, resync --id). */
  recordPath?: (id: string) => string;
}

/**
 * A Core/Subset stream from its reading side and its column declarations: the
 * raw schema (the id, each column's field, ModifiedOn), the mapper, `fields`
 * and the table's column types are derived from the columns.
 */
export function defineRestStream(
  def: Omit<RestStream, 'kind' | 'raw' | 'map' | 'fields' | 'table' | 'columnFacts'> & ColumnsDef,
): RestStream {
  return { kind: 'rest', ...def, ...deriveColumns(def, CORE_IDENTITY) };
}
