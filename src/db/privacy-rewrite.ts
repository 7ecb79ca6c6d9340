/**
 * Applying a stricter column policy to what is already stored, without a
 * request to the API: a resource table, its `_history` versions and the
 * stream's quarantined payloads are read in batches by key, each row's raw
 * and typed columns are transformed by the same functions that transform a
 * record as it enters pmsync (src/privacy/), and written back with their
 * content hash recomputed, so the next fetch of an unchanged record finds
 * the row unchanged. Runs in the caller's transaction.
 */
import { transformRecord, type RecordPolicy } from '../privacy/record.ts';
import type { Rule } from '../config/privacy.ts';
import { applyRule, isRemoved, type Normalise, type ValueShape } from '../privacy/rules.ts';
import type { ColumnType, TableDef } from './table.ts';
import type { Queryable } from './pool.ts';

/** Rows read and written per statement. */
export const REWRITE_BATCH = 500;

export interface ColumnRewrite {
  column: string;
  rule: Rule;
  type: ColumnType;
  normalise: Normalise;
}

/** What to apply: the rules at raw paths (and the fields raw keeps), and the typed columns' rules. */
export interface Rewrite {
  record: RecordPolicy;
  columns: ColumnRewrite[];
}

const q = (ident: string) => `"${ident.replaceAll('"', '""')}"`;

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function shapeOf(type: ColumnType): ValueShape {
  return type === 'date' || type === 'timestamp' || type === 'text' ? type : 'any';
}

/** A typed value (read as text) under its column's rule; null when nothing may be kept. */
function columnValue(c: ColumnRewrite, value: string | null, key: string | null): unknown {
  if (value === null) return null;
  // jsonb columns are read as their JSON text; a drop is all that may apply to them.
  const v = applyRule(c.rule, c.type === 'jsonb' ? JSON.parse(value) : value, shapeOf(c.type), c.normalise, key);
  return isRemoved(v) ? null : v;
}

/**
 * Rewrites a source's rows of a resource table (or, with `history`, of its
 * `_history` table). Returns how many rows changed.
 */
export async function rewriteRows(db: Queryable, table: TableDef, source: string, rw: Rewrite, history: boolean): Promise<number> {
  const name = history ? `${table.name}_history` : table.name;
  const key = history ? ['id', 'valid_from'] : ['id'];
  const cols = rw.columns.map((c) => c.column);
  const copies = history ? [] : Object.entries(table.managed ?? {}).flatMap(([c, m]) => (m.copiesContentHash ? [c] : []));
  const select = `SELECT id::text AS id${history ? ', valid_from::text AS valid_from' : ''}, raw${cols.map((c) => `, ${q(c)}::text AS ${q(c)}`).join('')}
FROM ${q(name)} WHERE source = $1 AND (NOT $2 OR (${key.join(', ')}) > ($3::${table.idType}${history ? ', $4::timestamptz' : ''}))
ORDER BY ${key.join(', ')} LIMIT ${REWRITE_BATCH}`;
  const recordset = [
    `id ${table.idType}`,
    ...(history ? ['valid_from timestamptz'] : []),
    'raw jsonb',
    ...rw.columns.map((c) => `${q(c.column)} ${c.type}`),
  ].join(', ');
  const update = `UPDATE ${q(name)} AS t SET raw = r.raw, content_hash = md5(r.raw::text)${cols.map((c) => `, ${q(c)} = r.${q(c)}`).join('')}${copies
    .map((c) => `, ${q(c)} = CASE WHEN t.${q(c)} = t.content_hash THEN md5(r.raw::text) ELSE t.${q(c)} END`)
    .join('')}
FROM jsonb_to_recordset($2::jsonb) AS r(${recordset})
WHERE t.source = $1 AND ${key.map((k) => `t.${k} = r.${k}`).join(' AND ')}`;

  let changed = 0;
  let after: string[] | null = null;
  for (;;) {
    type Stored = Record<string, string | null> & { id: string; valid_from?: string; raw: unknown };
    const res: { rows: Stored[] } = await db.query<Stored>(select, [
      source,
      after !== null,
      after?.[0] ?? null,
      ...(history ? [after?.[1] ?? null] : []),
    ]);
    const rows: Stored[] = res.rows;
    if (rows.length === 0) break;
    const out: Record<string, unknown>[] = [];
    for (const row of rows) {
      const raw = isPlainObject(row.raw) ? transformRecord(rw.record, row.raw) : row.raw;
      const values = Object.fromEntries(rw.columns.map((c) => [c.column, columnValue(c, row[c.column] ?? null, rw.record.key)]));
      const same =
        JSON.stringify(raw) === JSON.stringify(row.raw) && rw.columns.every((c) => sameValue(values[c.column], row[c.column] ?? null));
      if (!same) out.push({ id: row.id, ...(history ? { valid_from: row.valid_from } : {}), raw, ...values });
    }
    if (out.length > 0) changed += (await db.query(update, [source, JSON.stringify(out)])).rowCount ?? 0;
    const last: Stored = rows[rows.length - 1]!;
    after = history ? [last.id, last.valid_from!] : [last.id];
    if (rows.length < REWRITE_BATCH) break;
  }
  return changed;
}

function sameValue(next: unknown, stored: string | null): boolean {
  return next === stored || (next !== null && stored !== null && String(next) === stored);
}

/**
 * Rewrites the quarantined payloads of one stream. A reason quoting a value
 * the rewrite removed from the payload (a database's "invalid input" message)
 * has that value replaced too.
 */
export async function rewriteQuarantine(db: Queryable, source: string, resource: string, record: RecordPolicy): Promise<number> {
  const res = await db.query<{ id: string; raw: unknown; reason: string }>(
    'SELECT id::text AS id, raw, reason FROM pmsync.quarantine WHERE source = $1 AND resource = $2 ORDER BY id',
    [source, resource],
  );
  const out: Array<{ id: string; raw: unknown; reason: string }> = [];
  for (const row of res.rows) {
    if (!isPlainObject(row.raw)) continue;
    const raw = transformRecord(record, row.raw);
    if (JSON.stringify(raw) === JSON.stringify(row.raw)) continue;
    const kept = new Set(strings(raw));
    let reason = row.reason;
    for (const s of strings(row.raw)) if (!kept.has(s) && s.length > 1 && reason.includes(s)) reason = reason.split(s).join('[removed]');
    out.push({ id: row.id, raw, reason });
  }
  if (out.length === 0) return 0;
  const upd = await db.query(
    `UPDATE pmsync.quarantine AS q SET raw = r.raw, reason = r.reason
     FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, raw jsonb, reason text) WHERE q.id = r.id`,
    [JSON.stringify(out)],
  );
  return upd.rowCount ?? 0;
}

/** Every string in a JSON value, as text (numbers too: a reason may quote them). */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number') out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (isPlainObject(value)) for (const v of Object.values(value)) strings(v, out);
  return out;
}
