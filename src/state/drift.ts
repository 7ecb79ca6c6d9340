/**
 * The stored side of schema drift: each table's raw fields and column fill
 * (pmsync.raw_fields, pmsync.column_fill) and its report (pmsync.schema_drift).
 * What a run's observation does to them, and which findings they yield, is
 * decided in src/sync/drift.ts and src/sync/drift-record.ts.
 */
import type { Queryable } from '../db/pool.ts';

/** The stored state of one raw field of one table. */
export interface FieldState {
  field: string;
  /** Non-null JSON types first seen (the baseline a type change is measured against). */
  baselineTypes: string[];
  /** Non-null JSON types of the last run that saw a value. */
  lastTypes: string[];
  firstSeenAt: string;
  lastSeenAt: string;
  /** Records observed since the field was last present. */
  missingRecords: number;
  /** A complete full pass found it in no record. */
  missingInFullPass: boolean;
  /** Of the last run: records, records with the field, records with a value in it. */
  lastRecords: number;
  lastPresent: number;
  lastNonNull: number;
  /** Share of records holding the field in the last run that had it: sparse fields are not reported gone. */
  seenShare: number;
}

/** The stored state of one typed column of one table. */
export interface ColumnState {
  column: string;
  /** Mapped rows in a row with the column null. */
  nullStreak: number;
  /** A complete full pass mapped rows and filled it in none. */
  nullInFullPass: boolean;
  lastFilledAt: string | null;
}

/** One finding of a table's report as stored. */
export interface FindingRow {
  kind: string;
  subject: string;
  signature: string;
  detail: string;
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

/** A table's raw fields as stored, by name. */
export async function loadRawFields(db: Queryable, source: string, table: string): Promise<FieldState[]> {
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

/** A table's typed columns' fill as stored. */
export async function loadColumnFill(db: Queryable, source: string, table: string): Promise<ColumnState[]> {
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

/** Writes a table's raw fields and column fill (fields and columns not given are left as they are). */
export async function saveDriftState(
  db: Queryable,
  source: string,
  table: string,
  fields: FieldState[],
  columns: ColumnState[],
): Promise<void> {
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

/**
 * Serialises drift bookkeeping per source and table for the transaction (a run
 * and `pmsync drift --accept` may meet).
 */
export async function lockDriftTable(db: Queryable, source: string, table: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('pmsync.drift'), hashtext($1 || '/' || $2))", [source, table]);
}

/** The transaction's time, which a merged observation is stamped with. */
export async function driftClock(db: Queryable): Promise<string> {
  return (await db.query<{ now: Date }>('SELECT now()')).rows[0]!.now.toISOString();
}

/**
 * How many current rows of the source a table holds, and how many hold a
 * value in each of `columns` (in their order).
 */
export async function columnFillCounts(
  db: Queryable,
  source: string,
  table: string,
  columns: string[],
): Promise<{ rows: number; filled: number[] }> {
  const res = await db.query<Record<string, string>>(
    `SELECT now()::text AS now, count(*)::text AS rows, ${columns.map((c, i) => `count("${c}")::text AS c${i}`).join(', ')}
     FROM "public"."${table}" WHERE source = $1 AND not_seen_since IS NULL`,
    [source],
  );
  const counts = res.rows[0]!;
  return { rows: Number(counts.rows), filled: columns.map((_, i) => Number(counts[`c${i}`])) };
}

/** Forgets the fields that disappeared and takes each field's last types as its baseline. */
export async function acceptFieldShapes(db: Queryable, source: string, table: string, gone: string[]): Promise<void> {
  await db.query('DELETE FROM pmsync.raw_fields WHERE source = $1 AND table_name = $2 AND field = ANY($3::text[])', [source, table, gone]);
  await db.query(
    `UPDATE pmsync.raw_fields SET baseline_types = last_types WHERE source = $1 AND table_name = $2 AND jsonb_array_length(last_types) > 0`,
    [source, table],
  );
}

/** A table's stored report. */
export async function loadFindings(db: Queryable, source: string, table: string): Promise<FindingRow[]> {
  const res = await db.query<FindingRow>(
    'SELECT kind, subject, signature, detail FROM pmsync.schema_drift WHERE source = $1 AND table_name = $2',
    [source, table],
  );
  return res.rows;
}

/**
 * Replaces a table's stored report with `findings`: a finding that no longer
 * holds is deleted; one whose signature changed counts as new from now.
 */
export async function saveFindings(db: Queryable, source: string, table: string, findings: FindingRow[]): Promise<void> {
  const key = (f: FindingRow) => `${f.kind}/${f.subject}`;
  await db.query(
    `DELETE FROM pmsync.schema_drift WHERE source = $1 AND table_name = $2 AND NOT (kind || '/' || subject = ANY($3::text[]))`,
    [source, table, findings.map(key)],
  );
  await db.query(
    `INSERT INTO pmsync.schema_drift AS d (source, table_name, kind, subject, signature, detail)
     SELECT $1, $2, r.kind, r.subject, r.signature, r.detail FROM jsonb_to_recordset($3::jsonb) AS r(kind text, subject text, signature text, detail text)
     ON CONFLICT (source, table_name, kind, subject) DO UPDATE SET detail = excluded.detail, updated_at = now(),
       signature = excluded.signature, first_seen_at = CASE WHEN d.signature = excluded.signature THEN d.first_seen_at ELSE now() END`,
    [source, table, JSON.stringify(findings)],
  );
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
