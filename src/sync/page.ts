/**
 * Turning one fetched page into stored rows: apply the source's column
 * policies to every record first (so every copy below is the transformed
 * one), validate and map it (through the source's column overrides), set
 * aside the ones that fail, and write the rest with one upsert, plus their
 * history versions when the table keeps history. The caller runs this inside
 * the transaction that also saves the checkpoint.
 */
import type { SourceConfig } from '../config/schema.ts';
import { buildHistoryWrite, syncHistoryState } from '../db/history.ts';
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import { unstorablePaths } from '../db/storable.ts';
import { upsertPage, type UpsertMeta, type UpsertOutcome } from '../db/upsert.ts';
import type { Logger } from '../log.ts';
import { describeIssues } from '../mappers/common.ts';
import type { ChangeTally } from '../state/change-model.ts';
import { transformRecord, isOpen, type RecordPolicy } from '../privacy/record.ts';
import { OPEN_STORED } from '../privacy/stored.ts';
import { assertPolicy } from '../state/privacy-policies.ts';
import { clearQuarantine, quarantine, type Rejected } from '../state/quarantine.ts';
import type { DriftObserver } from './drift.ts';
import { applyPolicy } from './privacy-policies.ts';
import { DEFAULT_SETTINGS, remap, settingsFor, type TableSettings } from './table-settings.ts';
import type { MappedRow, PageTotals, TableDef } from '../db/table.ts';
import type { ColumnOverride, StreamBase } from './types.ts';

export type ValidRow = MappedRow & { raw: unknown };

/**
 * Typed columns the request knows better than the record: a fan-out's parent
 * key (the patient whose appointments were listed), which the record itself
 * may not carry. Not part of raw, so not covered by the content hash.
 */
export interface FromRequest {
  columns: string[];
  /** The values for the record at this index of the page. */
  values: (index: number) => Record<string, unknown>;
}

export interface ValidateOptions {
  fromRequest?: FromRequest;
  overrides?: ColumnOverride[];
  /** Notes the fields and filled columns of every record, for the schema-drift report. */
  observer?: DriftObserver;
  /** The column policies, applied to each record before anything else reads it. */
  privacy?: RecordPolicy;
}

/** Why a record that is not a JSON object is set aside without its content when policies apply. */
export const NOT_AN_OBJECT = 'not a JSON object: set aside without its content, as column policies cannot apply to it';

export function validateRecords(
  stream: StreamBase,
  records: unknown[],
  idOf: (raw: unknown) => string | null,
  options: ValidateOptions = {},
): { good: ValidRow[]; rejected: Rejected[] } {
  const { fromRequest, overrides = [], observer, privacy } = options;
  const transform = privacy && !isOpen(privacy) ? privacy : null;
  const good: ValidRow[] = [];
  const rejected: Rejected[] = [];
  for (const [index, received] of records.entries()) {
    let raw = received;
    if (transform) {
      if (received === null || typeof received !== 'object' || Array.isArray(received)) {
        rejected.push({ recordId: null, raw: {}, reason: NOT_AN_OBJECT });
        continue;
      }
      raw = transformRecord(transform, received as Record<string, unknown>);
    }
    // Checked first: such a record cannot be stored, not even its raw copy, and would fail the page's statement.
    const unstorable = unstorableReason(raw);
    if (unstorable) {
      rejected.push({ recordId: idOf(raw), raw, reason: unstorable });
      continue;
    }
    // Field names and JSON types only: the drift report also sees the fields raw does not keep.
    observer?.record(received);
    const parsed = stream.raw.safeParse(remap(raw, overrides));
    if (!parsed.success) {
      rejected.push({ recordId: idOf(raw), raw, reason: describeIssues(parsed.error) });
      continue;
    }
    try {
      const row = stream.map(parsed.data);
      if (fromRequest) row.columns = { ...row.columns, ...fromRequest.values(index) };
      observer?.row(row.columns);
      good.push({ ...row, raw });
    } catch (err) {
      rejected.push({ recordId: idOf(raw), raw, reason: `mapping failed: ${(err as Error).message}` });
    }
  }
  return { good, rejected: dedupeRejected(rejected) };
}

/** Why a raw record cannot be stored as it is, or null when it can (see src/db/storable.ts). */
export function unstorableReason(raw: unknown): string | null {
  const paths = unstorablePaths(raw);
  if (paths.length === 0) return null;
  const shown = paths.length > 5 ? `${paths.slice(0, 5).join(', ')} and ${paths.length - 5} more` : paths.join(', ');
  return `text PostgreSQL cannot store (a NUL character or an unpaired UTF-16 surrogate) in ${shown}; raw keeps the record with those characters written out as \\uXXXX escapes`;
}

function dedupeRejected(rejected: Rejected[]): Rejected[] {
  const byId = new Map<string, Rejected>();
  const anonymous: Rejected[] = [];
  for (const r of rejected) {
    if (r.recordId === null) anonymous.push(r);
    else byId.set(r.recordId, r);
  }
  return [...byId.values(), ...anonymous];
}

export interface WriteOptions {
  source: string;
  runId: number | null;
  sentAt: Date;
  markSeen: boolean;
  idOf: (raw: unknown) => string | null;
  fromRequest?: FromRequest;
  /** The source's settings for this table: column overrides and history mode. */
  settings?: TableSettings;
  observer?: DriftObserver;
  /** Counts the page's changes for the change model. */
  tally?: ChangeTally | null;
}

export async function writePage(tx: Queryable, stream: StreamBase, records: unknown[], options: WriteOptions): Promise<PageTotals> {
  const settings = options.settings ?? DEFAULT_SETTINGS;
  // The policy this page is written under must be the stored one (held FOR SHARE until commit).
  await assertPolicy(tx, options.source, stream.table.name, settings.privacy?.stored ?? OPEN_STORED);
  const { good, rejected } = validateRecords(stream, records, options.idOf, {
    fromRequest: options.fromRequest,
    overrides: settings.overrides,
    observer: options.observer,
    privacy: settings.privacy,
  });
  const outcome = await upsertRows(
    tx,
    stream.table,
    good,
    {
      source: options.source,
      runId: options.runId,
      fetchedAt: options.sentAt,
      markSeen: options.markSeen,
      compareColumns: options.fromRequest?.columns,
    },
    settings.history,
  );
  options.tally?.addPage(
    good.map((g) => g.sourceModifiedAt),
    outcome.inserted + outcome.updated,
  );
  const refused: Rejected[] = outcome.failed.map((f) => ({ recordId: f.row.id, raw: f.row.raw, reason: f.reason }));
  const allRejected = [...rejected, ...refused];
  await quarantine(tx, options.source, stream.resource, options.runId, allRejected);
  const refusedIds = new Set(refused.map((r) => r.recordId));
  await clearQuarantine(
    tx,
    options.source,
    stream.resource,
    good.map((g) => g.id).filter((id) => !refusedIds.has(id)),
  );
  return { inserted: outcome.inserted, updated: outcome.updated, unchanged: outcome.unchanged, rejected: allRejected.length };
}

/** The page upsert, then the history versions of the rows it wrote when the table keeps history. */
export async function upsertRows(
  tx: Queryable,
  table: TableDef,
  rows: ValidRow[],
  meta: UpsertMeta,
  history: boolean,
): Promise<UpsertOutcome> {
  const outcome = await upsertPage(tx, table, rows, { ...meta, returnIds: history });
  if (history && outcome.written.length > 0) await tx.query(buildHistoryWrite(table, meta.source, outcome.written, meta.compareColumns));
  return outcome;
}

/**
 * The source's settings for a stream's table, read once per run before its
 * first page; brings what is stored in line with a stricter column policy,
 * and the table's history in line when history was just switched on (or
 * forgets it when switched off).
 */
export async function prepareTable(pool: Pool, logger: Logger, source: SourceConfig, stream: StreamBase): Promise<TableSettings> {
  const settings = settingsFor(source, stream);
  await applyPolicy(pool, logger, source, stream, settings, 'run');
  const copied = await withTransaction(pool, (tx) => syncHistoryState(tx, stream.table, source.name, settings.history));
  if (copied !== null)
    logger.info(
      { source: source.name, table: stream.table.name, versions: copied },
      'history switched on: current rows copied in as first versions',
    );
  return settings;
}

/** Reads a string id field of a raw record, if it has one. */
export function idReader(field: string): (raw: unknown) => string | null {
  return (raw) => {
    const v = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>)[field] : undefined;
    return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
  };
}
