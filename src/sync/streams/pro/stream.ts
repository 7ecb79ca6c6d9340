/**
 * The shapes of Pro streams. Every Pro path is below /practices/{practiceId};
 * the paths here start after it. Lists are `{ data: [...] }` paged by Page and
 * Limit.
 *
 * - list: one list read whole on every run; rows it no longer returns are
 *   marked not seen.
 * - fan-out: one read per key (a patient's appointment list, one waitlist
 *   entry), keys taken from rows already stored, in ascending order so the
 *   checkpoint is simply "every key up to N is done".
 * - snapshot: open capacity captured at one instant (availability).
 */
import type { ProSourceConfig } from '../../../config/schema.ts';
import type { Queryable } from '../../../db/pool.ts';
import { deriveColumns, PRO_IDENTITY, type ColumnsDef } from '../../columns.ts';
import type { StreamBase } from '../../types.ts';

export interface ProListStream<Raw extends Record<string, unknown> = Record<string, unknown>> extends StreamBase<Raw> {
  kind: 'pro-list';
  path: string;
  idField: string;
}

export interface KeyQuery {
  source: ProSourceConfig;
  /** Only keys whose parent row changed since the key was last read (an incremental pass). */
  changedOnly: boolean;
  /** Only keys whose parent row was written after this instant (database clock); null for no bound. */
  changedSince: Date | null;
  /** Keys above this one (the checkpoint). */
  after: number;
  limit: number;
}

export interface ProFanOutStream<Raw extends Record<string, unknown> = Record<string, unknown>> extends StreamBase<Raw> {
  kind: 'pro-fan-out';
  idField: string;
  /** What one key reads: every page of a list, or one record. A 404 reads as nothing. */
  read: { list: (key: number) => string } | { record: (key: number) => string };
  /**
   * The next keys of a pass, ascending. Incremental streams honour
   * `changedOnly` and `changedSince`; the others read every key on every pass.
   */
  keys: (db: Queryable, q: KeyQuery) => Promise<number[]>;
  /** Whether a pass can be narrowed to changed keys (else every pass is full). */
  incremental: boolean;
  /** Records, in the batch's transaction, that these keys were read, so `changedOnly` passes skip them until they change. */
  markRead?: (db: Queryable, source: ProSourceConfig, keys: number[]) => Promise<void>;
  /**
   * The column holding the key in the stream's table: after a key is read, its
   * rows that were not returned are marked not seen.
   */
  keyColumn: string;
  /**
   * A full pass reads every key the table's rows can belong to, so at its end
   * the rows it did not return are gone (their key was removed, or they were
   * stored without their key) and are marked not seen.
   */
  coversTable?: boolean;
}

export interface ProSnapshotStream {
  kind: 'pro-snapshot';
  resource: string;
  /** The table `pmsync status` counts. */
  table: { name: string };
}

export type ProStream = ProListStream | ProFanOutStream | ProSnapshotStream;

/** Pro streams declare their columns like Core ones (src/sync/columns.ts); ids are integers and records carry no ModifiedOn. */
export function defineProList(
  def: Omit<ProListStream, 'kind' | 'raw' | 'map' | 'fields' | 'table' | 'columnFacts'> & ColumnsDef,
): ProListStream {
  return { kind: 'pro-list', ...def, ...deriveColumns(def, PRO_IDENTITY) };
}

export function defineProFanOut(
  def: Omit<ProFanOutStream, 'kind' | 'raw' | 'map' | 'fields' | 'table' | 'columnFacts'> & ColumnsDef,
): ProFanOutStream {
  return { kind: 'pro-fan-out', ...def, ...deriveColumns(def, PRO_IDENTITY) };
}
