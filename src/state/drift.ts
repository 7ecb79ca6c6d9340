/**
 * The stored side of schema drift (src/sync/drift.ts): a run's observation is
 * merged into pmsync.raw_fields and pmsync.column_fill once, at the end of the
 * run, and the table's report in pmsync.schema_drift is recomputed. A finding
 * is logged when it first appears or its content changes (not its counts),
 * and once more when it no longer holds.
 */
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import {
  driftReport,
  mergeObservation,
  type ColumnState,
  type DriftObserver,
  type DriftPrivacy,
  type FieldState,
  type Finding,
} from '../sync/drift.ts';
import { effectiveFields, type TableSettings } from '../sync/table-settings.ts';
import type { StreamBase } from '../sync/types.ts';

export interface DriftTable {
  source: string;
  stream: StreamBase;
  settings: TableSettings;
}

interface FieldRow {
  field: string;
  baseline_types: string[];
  last_types: string[];
  first_seen_at: Date;
  last_seen_at: Date;
  missing_records: string;
  missing_in_full_pass: boolean;
  last_records: number;
  last_present: number;
  last_non_null: number;
  seen_share: number;
}

function driftPrivacy(settings: TableSettings): DriftPrivacy {
  return { named: settings.privacy?.named ?? [], declaredOnly: (settings.privacy?.declared ?? null) !== null };
}

async function loadFields(db: Queryable, source: string, table: string): Promise<FieldState[]> {
  const res = await db.query<FieldRow>('SELECT * FROM pmsync.raw_fields WHERE source = $1 AND table_name = $2 ORDER BY field', [
    source,
    table,
  ]);
  return res.rows.map((r) => ({
    field: r.field,
    baselineTypes: r.baseline_types,
    lastTypes: r.last_types,
    firstSeenAt: r.first_seen_at.toISOString(),
    lastSeenAt: r.last_seen_at.toISOString(),
    missingRecords: Number(r.missing_records),
    missingInFullPass: r.missing_in_full_pass,
    lastRecords: r.last_records,
    lastPresent: r.last_present,
    lastNonNull: r.last_non_null,
    seenShare: r.seen_share,
  }));
}

async function loadColumns(db: Queryable, source: string, table: string): Promise<ColumnState[]> {
  const res = await db.query<{ column_name: string; null_streak: string; null_in_full_pass: boolean; last_filled_at: Date | null }>(
    'SELECT column_name, null_streak, null_in_full_pass, last_filled_at FROM pmsync.column_fill WHERE source = $1 AND table_name = $2',
    [source, table],
  );
  return res.rows.map((r) => ({
    column: r.column_name,
    nullStreak: Number(r.null_streak),
    nullInFullPass: r.null_in_full_pass,
    lastFilledAt: r.last_filled_at?.toISOString() ?? null,
  }));
}

async function saveState(db: Queryable, source: string, table: string, fields: FieldState[], columns: ColumnState[]): Promise<void> {
  await db.query(
    `INSERT INTO pmsync.raw_fields AS f (source, table_name, field, baseline_types, last_types, first_seen_at, last_seen_at, missing_records,
       missing_in_full_pass, last_records, last_present, last_non_null, seen_share)
     SELECT $1, $2, r.field, r."baselineTypes", r."lastTypes", r."firstSeenAt", r."lastSeenAt", r."missingRecords", r."missingInFullPass",
       r."lastRecords", r."lastPresent", r."lastNonNull", r."seenShare"
     FROM jsonb_to_recordset($3::jsonb) AS r(field text, "baselineTypes" jsonb, "lastTypes" jsonb, "firstSeenAt" timestamptz, "lastSeenAt" timestamptz,
       "missingRecords" bigint, "missingInFullPass" boolean, "lastRecords" int, "lastPresent" int, "lastNonNull" int, "seenShare" float8)
     ON CONFLICT (source, table_name, field) DO UPDATE SET baseline_types = excluded.baseline_types, last_types = excluded.last_types,
       last_seen_at = excluded.last_seen_at, missing_records = excluded.missing_records, missing_in_full_pass = excluded.missing_in_full_pass,
       last_records = excluded.last_records, last_present = excluded.last_present, last_non_null = excluded.last_non_null, seen_share = excluded.seen_share`,
    [source, table, JSON.stringify(fields)],
  );
  await db.query(
    `INSERT INTO pmsync.column_fill (source, table_name, column_name, null_streak, null_in_full_pass, last_filled_at)
     SELECT $1, $2, r.column, r."nullStreak", r."nullInFullPass", r."lastFilledAt"
     FROM jsonb_to_recordset($3::jsonb) AS r("column" text, "nullStreak" bigint, "nullInFullPass" boolean, "lastFilledAt" timestamptz)
     ON CONFLICT (source, table_name, column_name) DO UPDATE SET null_streak = excluded.null_streak,
       null_in_full_pass = excluded.null_in_full_pass, last_filled_at = excluded.last_filled_at`,
    [source, table, JSON.stringify(columns)],
  );
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
  const findings = driftReport(t.source, t.stream, effectiveFields(t.stream, t.settings), fields, columns, driftPrivacy(t.settings));
  const before = await db.query<{ kind: string; subject: string; signature: string; detail: string }>(
    'SELECT kind, subject, signature, detail FROM pmsync.schema_drift WHERE source = $1 AND table_name = $2',
    [t.source, table],
  );
  const key = (f: { kind: string; subject: string }) => `${f.kind}/${f.subject}`;
  const stored = new Map(before.rows.map((r) => [key(r), r]));
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
  for (const old of before.rows) {
    if (!now.has(key(old)))
      log.info({ table, kind: old.kind, subject: old.subject }, `schema drift resolved: ${t.source}/${table}: ${old.detail}`);
  }
  await db.query(
    `DELETE FROM pmsync.schema_drift WHERE source = $1 AND table_name = $2 AND NOT (kind || '/' || subject = ANY($3::text[]))`,
    [t.source, table, [...now]],
  );
  await db.query(
    `INSERT INTO pmsync.schema_drift AS d (source, table_name, kind, subject, signature, detail)
     SELECT $1, $2, r.kind, r.subject, r.signature, r.detail FROM jsonb_to_recordset($3::jsonb) AS r(kind text, subject text, signature text, detail text)
     ON CONFLICT (source, table_name, kind, subject) DO UPDATE SET detail = excluded.detail, updated_at = now(),
       signature = excluded.signature, first_seen_at = CASE WHEN d.signature = excluded.signature THEN d.first_seen_at ELSE now() END`,
    [t.source, table, JSON.stringify(findings)],
  );
  return findings;
}

/** Serialises drift bookkeeping per source and table (a run and `pmsync drift --accept` may meet). */
async function lockTable(db: Queryable, source: string, table: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('pmsync.drift'), hashtext($1 || '/' || $2))", [source, table]);
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
    await lockTable(tx, t.source, table);
    const now = (await tx.query<{ now: Date }>('SELECT now()')).rows[0]!.now.toISOString();
    const stored = await loadFields(tx, t.source, table);
    const merged = mergeObservation(
      stored,
      await loadColumns(tx, t.source, table),
      observation,
      Object.keys(t.stream.table.columns),
      fullPass,
      now,
    );
    await saveState(tx, t.source, table, merged.fields, merged.columns);
    return refreshFindings(tx, log, t, merged.fields, merged.columns, stored.length === 0);
  });
}

/** Recomputes a table's report from what is stored, e.g. after its column overrides changed. */
export async function refreshDrift(pool: Pool, log: Logger, t: DriftTable): Promise<Finding[]> {
  const table = t.stream.table.name;
  return withTransaction(pool, async (tx) => {
    await lockTable(tx, t.source, table);
    return refreshFindings(tx, log, t, await loadFields(tx, t.source, table), await loadColumns(tx, t.source, table));
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
    await lockTable(tx, t.source, table);
    const state = new Map((await loadColumns(tx, t.source, table)).map((c) => [c.column, c]));
    if (columns.length > 0) {
      const res = await tx.query<Record<string, string>>(
        `SELECT now()::text AS now, count(*)::text AS rows, ${columns.map((c, i) => `count("${c}")::text AS c${i}`).join(', ')}
         FROM "public"."${table}" WHERE source = $1 AND not_seen_since IS NULL`,
        [t.source],
      );
      const counts = res.rows[0]!;
      const rows = Number(counts.rows);
      columns.forEach((column, i) => {
        if (rows === 0) return;
        const c = state.get(column) ?? { column, nullStreak: 0, nullInFullPass: false, lastFilledAt: null };
        if (Number(counts[`c${i}`]) > 0) state.set(column, { ...c, nullStreak: 0, nullInFullPass: false, lastFilledAt: c.lastFilledAt });
        else state.set(column, { ...c, nullStreak: rows, nullInFullPass: true });
      });
    }
    const fields = await loadFields(tx, t.source, table);
    await saveState(tx, t.source, table, fields, [...state.values()]);
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
    await lockTable(tx, t.source, table);
    const fields = await loadFields(tx, t.source, table);
    const report = driftReport(
      t.source,
      t.stream,
      effectiveFields(t.stream, t.settings),
      fields,
      await loadColumns(tx, t.source, table),
      driftPrivacy(t.settings),
    );
    const gone = report.filter((f) => f.kind === 'disappeared_field').map((f) => f.subject);
    await tx.query('DELETE FROM pmsync.raw_fields WHERE source = $1 AND table_name = $2 AND field = ANY($3::text[])', [
      t.source,
      table,
      gone,
    ]);
    await tx.query(
      `UPDATE pmsync.raw_fields SET baseline_types = last_types WHERE source = $1 AND table_name = $2 AND jsonb_array_length(last_types) > 0`,
      [t.source, table],
    );
    return refreshFindings(tx, log, t, await loadFields(tx, t.source, table), await loadColumns(tx, t.source, table));
  });
}

export interface StoredFinding {
  table: string;
  kind: string;
  subject: string;
  /** What the finding says without counts (for an unmapped field: whether raw keeps it). */
  signature: string;
  detail: string;
  since: string;
}

/** The current report of some sources, for `status`. */
export async function driftFindings(db: Queryable, sources: string[]): Promise<Map<string, StoredFinding[]>> {
  const res = await db.query<{
    source: string;
    table_name: string;
    kind: string;
    subject: string;
    signature: string;
    detail: string;
    first_seen_at: Date;
  }>(
    `SELECT source, table_name, kind, subject, signature, detail, first_seen_at FROM pmsync.schema_drift WHERE source = ANY($1::text[])
     ORDER BY source, table_name,
       CASE kind WHEN 'personal_field' THEN 0 WHEN 'empty_column' THEN 1 WHEN 'disappeared_field' THEN 2 WHEN 'type_changed' THEN 3 ELSE 4 END, subject`,
    [sources],
  );
  const out = new Map<string, StoredFinding[]>();
  for (const r of res.rows) {
    const key = `${r.source}/${r.table_name}`;
    const list = out.get(key) ?? [];
    list.push({
      table: r.table_name,
      kind: r.kind,
      subject: r.subject,
      signature: r.signature,
      detail: r.detail,
      since: r.first_seen_at.toISOString(),
    });
    out.set(key, list);
  }
  return out;
}

/** Findings per source, table and kind, for the /metrics gauge. */
export async function driftCounts(db: Queryable): Promise<Array<{ source: string; table: string; kind: string; count: number }>> {
  const res = await db.query<{ source: string; table_name: string; kind: string; n: number }>(
    'SELECT source, table_name, kind, count(*)::int AS n FROM pmsync.schema_drift GROUP BY 1, 2, 3',
  );
  return res.rows.map((r) => ({ source: r.source, table: r.table_name, kind: r.kind, count: r.n }));
}
