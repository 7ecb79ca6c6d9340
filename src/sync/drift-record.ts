/**
 * Schema drift kept up to date (src/sync/drift.ts says what it finds): a
 * run's observation is merged into the table's stored state
 * (src/state/drift.ts) once, at the end of the run, and the table's report is
 * recomputed. A finding is logged when it first appears or its content
 * changes (not its counts), and once more when it no longer holds.
 */
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import {
  acceptFieldShapes,
  columnFillCounts,
  driftClock,
  loadColumnFill,
  loadFindings,
  loadRawFields,
  lockDriftTable,
  saveDriftState,
  saveFindings,
  type ColumnState,
  type FieldState,
} from '../state/drift.ts';
import { driftReport, mergeObservation, type DriftObserver, type DriftPrivacy, type Finding } from './drift.ts';
import { effectiveFields, type TableSettings } from './table-settings.ts';
import type { StreamBase } from './types.ts';

export interface DriftTable {
  source: string;
  stream: StreamBase;
  settings: TableSettings;
}

function driftPrivacy(settings: TableSettings): DriftPrivacy {
  return { named: settings.privacy?.named ?? [], declaredOnly: (settings.privacy?.declared ?? null) !== null };
}

function report(t: DriftTable, fields: FieldState[], columns: ColumnState[]): Finding[] {
  return driftReport(t.source, t.stream, effectiveFields(t.stream, t.settings), fields, columns, driftPrivacy(t.settings));
}

/** Recomputes a table's findings from its stored state, stores them and logs what changed. */
async function refreshFindings(
  db: Queryable,
  log: Logger,
  t: DriftTable,
  fields: FieldState[],
  columns: ColumnState[],
  firstLook = false,
): Promise<Finding[]> {
  const table = t.stream.table.name;
  const findings = report(t, fields, columns);
  const before = await loadFindings(db, t.source, table);
  const key = (f: { kind: string; subject: string }) => `${f.kind}/${f.subject}`;
  const stored = new Map(before.map((r) => [key(r), r]));
  const now = new Set(findings.map(key));
  for (const f of findings) {
    const old = stored.get(key(f));
    if (old?.signature === f.signature) continue;
    // The source is in the message, not a field: a run's logger already carries it.
    const fields = { table, kind: f.kind, subject: f.subject };
    // The fields no column reads that a table's first records carry are its baseline, not a change:
    // said at debug level (pmsync drift lists them); a field that appears later is said at info.
    if (f.kind === 'unmapped_field') log[firstLook ? 'debug' : 'info'](fields, `schema drift: ${t.source}/${table}: ${f.detail}`);
    else log.warn(fields, `schema drift: ${t.source}/${table}: ${f.detail}`);
  }
  for (const old of before) {
    if (!now.has(key(old)))
      log.info({ table, kind: old.kind, subject: old.subject }, `schema drift resolved: ${t.source}/${table}: ${old.detail}`);
  }
  await saveFindings(db, t.source, table, findings);
  return findings;
}

/**
 * Merges one run's observation into the table's state and refreshes its
 * report. `fullPass`: the run read a whole full pass from its start, so a
 * field or value absent from all of it is gone.
 */
export async function recordDrift(
  pool: Pool,
  log: Logger,
  t: DriftTable,
  observation: DriftObserver,
  fullPass: boolean,
): Promise<Finding[]> {
  const table = t.stream.table.name;
  return withTransaction(pool, async (tx) => {
    await lockDriftTable(tx, t.source, table);
    const now = await driftClock(tx);
    const stored = await loadRawFields(tx, t.source, table);
    const merged = mergeObservation(
      stored,
      await loadColumnFill(tx, t.source, table),
      observation,
      Object.keys(t.stream.table.columns),
      fullPass,
      now,
    );
    await saveDriftState(tx, t.source, table, merged.fields, merged.columns);
    return refreshFindings(tx, log, t, merged.fields, merged.columns, stored.length === 0);
  });
}

/** Recomputes a table's report from what is stored, e.g. after its column overrides changed. */
export async function refreshDrift(pool: Pool, log: Logger, t: DriftTable): Promise<Finding[]> {
  const table = t.stream.table.name;
  return withTransaction(pool, async (tx) => {
    await lockDriftTable(tx, t.source, table);
    return refreshFindings(tx, log, t, await loadRawFields(tx, t.source, table), await loadColumnFill(tx, t.source, table));
  });
}

/**
 * After `repopulate` recomputed `columns` of every stored row of the source:
 * their fill is read from those rows (those the API still returns), so a
 * column an override left empty is reported at once, not after the next full
 * pass, and one it filled again clears. Then the report is refreshed.
 */
export async function recordRepopulated(pool: Pool, log: Logger, t: DriftTable, columns: string[]): Promise<Finding[]> {
  const table = t.stream.table.name;
  return withTransaction(pool, async (tx) => {
    await lockDriftTable(tx, t.source, table);
    const state = new Map((await loadColumnFill(tx, t.source, table)).map((c) => [c.column, c]));
    if (columns.length > 0) {
      const { rows, filled } = await columnFillCounts(tx, t.source, table, columns);
      columns.forEach((column, i) => {
        if (rows === 0) return;
        const c = state.get(column) ?? { column, nullStreak: 0, nullInFullPass: false, lastFilledAt: null };
        if (filled[i]! > 0) state.set(column, { ...c, nullStreak: 0, nullInFullPass: false, lastFilledAt: c.lastFilledAt });
        else state.set(column, { ...c, nullStreak: rows, nullInFullPass: true });
      });
    }
    const fields = await loadRawFields(tx, t.source, table);
    await saveDriftState(tx, t.source, table, fields, [...state.values()]);
    return refreshFindings(tx, log, t, fields, [...state.values()]);
  });
}

/**
 * Takes a table's current shape as normal: each field's last types become its
 * baseline and fields that disappeared are forgotten, so type_changed and
 * disappeared_field findings clear until the shape changes again.
 */
export async function acceptDrift(pool: Pool, log: Logger, t: DriftTable): Promise<Finding[]> {
  const table = t.stream.table.name;
  return withTransaction(pool, async (tx) => {
    await lockDriftTable(tx, t.source, table);
    const fields = await loadRawFields(tx, t.source, table);
    const gone = report(t, fields, await loadColumnFill(tx, t.source, table))
      .filter((f) => f.kind === 'disappeared_field')
      .map((f) => f.subject);
    await acceptFieldShapes(tx, t.source, table, gone);
    return refreshFindings(tx, log, t, await loadRawFields(tx, t.source, table), await loadColumnFill(tx, t.source, table));
  });
}
