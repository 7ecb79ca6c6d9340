/**
 * Turning one fetched page into stored rows: validate and map every record,
 * set aside the ones that fail, and write the rest with one upsert. The caller
 * runs this inside the transaction that also saves the checkpoint.
 */
import type { Queryable } from '../db/pool.ts';
import { upsertPage } from '../db/upsert.ts';
import { describeIssues } from '../mappers/common.ts';
import { clearQuarantine, quarantine, type Rejected } from '../state/quarantine.ts';
import type { MappedRow, PageTotals, StreamBase } from './types.ts';

export type ValidRow = MappedRow & { raw: unknown };

export function validateRecords(
  stream: StreamBase,
  records: unknown[],
  idOf: (raw: unknown) => string | null,
): { good: ValidRow[]; rejected: Rejected[] } {
  const good: ValidRow[] = [];
  const rejected: Rejected[] = [];
  for (const raw of records) {
    const parsed = stream.raw.safeParse(raw);
    if (!parsed.success) {
      rejected.push({ recordId: idOf(raw), raw, reason: describeIssues(parsed.error) });
      continue;
    }
    try {
      good.push({ ...stream.map(parsed.data), raw });
    } catch (err) {
      rejected.push({ recordId: idOf(raw), raw, reason: `mapping failed: ${(err as Error).message}` });
    }
  }
  return { good, rejected: dedupeRejected(rejected) };
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
}

export async function writePage(tx: Queryable, stream: StreamBase, records: unknown[], options: WriteOptions): Promise<PageTotals> {
  const { good, rejected } = validateRecords(stream, records, options.idOf);
  const outcome = await upsertPage(tx, stream.table, good, {
    source: options.source,
    runId: options.runId,
    fetchedAt: options.sentAt,
    markSeen: options.markSeen,
  });
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

/** Reads a string id field of a raw record, if it has one. */
export function idReader(field: string): (raw: unknown) => string | null {
  return (raw) => {
    const v = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>)[field] : undefined;
    return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
  };
}
