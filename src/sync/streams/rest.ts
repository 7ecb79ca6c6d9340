/**
 * The shape of a Core/Subset stream: a Page/Rows list of one resource.
 */
import type { z } from 'zod';
import type { RestSourceConfig } from '../../config.ts';
import type { MappedRow, StreamBase, SyncMode, TableDef } from '../types.ts';

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

export function defineRestStream<S extends z.ZodType<Record<string, unknown>>>(
  def: Omit<RestStream<z.infer<S>>, 'kind' | 'raw' | 'map'> & { raw: S; map: (raw: z.infer<S>) => MappedRow; table: TableDef },
): RestStream {
  return { kind: 'rest', ...def } as unknown as RestStream;
}
