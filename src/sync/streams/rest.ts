/**
 * The shape of a Core/Subset stream: a Page/Rows list of one resource.
 */
import type { RestSourceConfig } from '../../config/schema.ts';
import { CORE_IDENTITY, deriveColumns, type ColumnsDef } from '../columns.ts';
import type { StreamBase, SyncMode } from '../types.ts';

export type RestVariant = 'core' | 'subset';

/** A path below the source's base URL with "{id}" where a record's id goes, e.g. "appointments/{id}/details". */
export type RecordUrlShape = `${string}{id}${string}`;

/** What the Core API's webhooks say about a resource (spec "Events"). */
export interface StreamWebhook {
  /** The names of the events the API sends when a record is created or updated, spelled as the spec does. */
  events: readonly string[];
  /**
   * Where each event's Url points: the record's single-record endpoint, so
   * the stream's `recordPath` follows from it.
   */
  recordUrl: RecordUrlShape;
}

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
  /** The resource's webhooks, where the API sends any; the receiver's tables are derived from these (src/webhooks/catalog.ts). */
  webhook?: StreamWebhook;
  /** Path of the single-record endpoint, where the API has one (webhook refreshes, resync --id). */
  recordPath?: (id: string) => string;
}

/**
 * A stream with webhooks has its single-record endpoint in `webhook.recordUrl`
 * and declares no `recordPath` of its own; one without may declare one.
 */
type RecordDef = { webhook: StreamWebhook; recordPath?: never } | { webhook?: never; recordPath?: (id: string) => string };

/**
 * A Core/Subset stream from its reading side and its column declarations: the
 * raw schema (the id, each column's field, ModifiedOn), the mapper, `fields`
 * and the table's column types are derived from the columns.
 */
export function defineRestStream(
  def: Omit<RestStream, 'kind' | 'raw' | 'map' | 'fields' | 'table' | 'columnFacts' | 'webhook' | 'recordPath'> & RecordDef & ColumnsDef,
): RestStream {
  const record = def.webhook ? { recordPath: recordPathOf(def.webhook.recordUrl) } : {};
  return { kind: 'rest', ...def, ...record, ...deriveColumns(def, CORE_IDENTITY) };
}

/** The request path of a record URL shape: "/appointments/a%2Fb/details" for the id "a/b". */
function recordPathOf(shape: RecordUrlShape): (id: string) => string {
  return (id) => `/${shape.replace('{id}', () => encodeURIComponent(id))}`;
}
