/**
 * The column vocabulary of stream files: each typed column of a resource table
 * is declared once, as its name, its kind and the raw field it is read from
 * (`first_name: text('FirstName')`), and whether it holds personal data
 * (`email: text('Email', { personal: 'email' })`). From these declarations the
 * stream gets its raw zod schema, its mapper, its `fields` (drift reports,
 * per-source column overrides), its table's column types and what column
 * policies may apply where (src/sync/privacy.ts); `npm run tables` writes the
 * Prisma models and the migrations from the same declarations, and
 * docs/privacy.md lists the personal columns from them.
 */
import { z } from 'zod';
import {
  opaqueId,
  optBool,
  optDate,
  optDateTime,
  optDecimal,
  optId,
  optInt,
  optText,
  orNull,
  toDate,
  toDecimal,
  toTimestamp,
} from '../mappers/common.ts';
import { optProId, proId as proIdSchema } from '../mappers/pro/common.ts';
import type { PersonalKind } from '../privacy/rules.ts';
import type { ColumnDoc, ColumnType, ManagedColumn, MappedRow, TableDef } from '../db/table.ts';
import type { ColumnFacts } from './types.ts';

type RawRecord = Record<string, unknown>;

export interface Column {
  type: ColumnType;
  /** Raw fields this column reads, with their schemas; they join the stream's raw schema. */
  raw: Record<string, z.ZodType>;
  /**
   * The one top-level raw field the column is read from, when a source may
   * remap it (`columns` settings) and drift reports may name it. Absent for
   * computed columns and for columns the request fills.
   */
  field?: string;
  value: (record: RawRecord) => unknown;
  /** Raw paths the value comes from (dotted for nested fields): where the column's policy applies in raw. */
  reads: string[];
  /** What personal data the column holds, if it holds any. */
  personal?: PersonalKind;
  filledByRequest?: boolean;
  /** Its one-line meaning: the column's COMMENT in the database and its line in docs/tables.md. */
  doc?: string;
}

export interface ColumnOptions {
  /**
   * The request knows the value better than the record (a fan-out's parent
   * key): the record's field is read when present, the request's value wins,
   * and the column cannot be remapped.
   */
  filledByRequest?: boolean;
  /**
   * The column holds personal data of this kind: `"columns": "personal:hash"`
   * reaches it, the docs mark it, and its values are normalised for hashing
   * as the kind says (emails lower-cased, phones reduced to digits).
   */
  personal?: PersonalKind;
  /** The column's one-line meaning, for analysts: its COMMENT in the database, docs/tables.md, dbt sources. */
  doc?: string;
}

function fieldColumn(
  type: ColumnType,
  schema: z.ZodType,
  convert: (v: never) => unknown,
  field: string,
  options: ColumnOptions = {},
): Column {
  const column: Column = { type, raw: { [field]: schema }, value: (r) => convert(r[field] as never), reads: [field] };
  if (!options.filledByRequest) column.field = field;
  else column.filledByRequest = true;
  if (options.personal) column.personal = options.personal;
  if (options.doc) column.doc = options.doc;
  return column;
}

/** Free text. */
export const text = (field: string, options?: ColumnOptions) => fieldColumn('text', optText, orNull, field, options);
/** An opaque Core id of another record, kept exactly as received. */
export const id = (field: string, options?: ColumnOptions) => fieldColumn('text', optId, orNull, field, options);
/** An integer Pro id of another record, stored as bigint. */
export const proId = (field: string, options?: ColumnOptions) => fieldColumn('bigint', optProId, orNull, field, options);
export const bool = (field: string, options?: ColumnOptions) => fieldColumn('boolean', optBool, orNull, field, options);
/** A date, or a date-time reduced to its date. */
export const date = (field: string, options?: ColumnOptions) => fieldColumn('date', optDate, toDate, field, options);
/** A date-time stored as wall-clock `timestamp` (see toTimestamp). */
export const timestamp = (field: string, options?: ColumnOptions) => fieldColumn('timestamp', optDateTime, toTimestamp, field, options);
/** Money and other decimals, stored exactly as a numeric string. */
export const numeric = (field: string, options?: ColumnOptions) => fieldColumn('numeric', optDecimal, toDecimal, field, options);
export const integer = (field: string, options?: ColumnOptions) => fieldColumn('integer', optInt, orNull, field, options);
/** A JSON value validated by `schema` (made nullable here), stored as jsonb. */
export const jsonb = (field: string, schema: z.ZodType, options?: ColumnOptions) =>
  fieldColumn('jsonb', schema.nullish(), orNull, field, options);

export interface ComputedOptions {
  /** The raw paths the value is taken from (`patient.firstName`), where the column's policy applies in raw. */
  reads: string[];
  personal?: PersonalKind;
  /** The column's one-line meaning (see ColumnOptions.doc). */
  doc?: string;
}

/**
 * The escape hatch: a column computed from the whole (validated) record, e.g.
 * from a nested object. The raw fields it reads are declared by the stream
 * (`raw`) so that several computed columns can share them; `reads` names the
 * paths its value comes from, so a policy on the column reaches them.
 */
export function computed<R>(type: ColumnType, value: (record: R) => unknown, options: ComputedOptions): Column {
  const column: Column = { type, raw: {}, value: value as unknown as (record: RawRecord) => unknown, reads: options.reads };
  if (options.personal) column.personal = options.personal;
  if (options.doc) column.doc = options.doc;
  return column;
}

export interface ColumnsDef {
  /** The raw field holding the record's id. */
  idField: string;
  /** Raw fields read by computed columns, validated before the columns' own fields. */
  raw?: Record<string, z.ZodType>;
  table: {
    name: string;
    columns: Record<string, Column>;
    /** Indexes besides the primary key, as column lists. */
    indexes?: string[][];
    /** Columns no record fills, kept by pmsync itself (see TableDef.managed). */
    managed?: Record<string, ManagedColumn>;
  };
}

export interface Derived {
  raw: z.ZodType<RawRecord>;
  map: (raw: RawRecord) => MappedRow;
  fields: Record<string, string>;
  table: TableDef;
  columnFacts: Record<string, ColumnFacts>;
}

/** The kind-specific parts: how the id is validated and stored, and whether records carry ModifiedOn. */
export interface IdentityKind {
  idType: TableDef['idType'];
  idSchema: z.ZodType;
  modifiedOn: boolean;
}

export const CORE_IDENTITY: IdentityKind = { idType: 'text', idSchema: opaqueId, modifiedOn: true };
export const PRO_IDENTITY: IdentityKind = { idType: 'bigint', idSchema: proIdSchema, modifiedOn: false };

/** Raw schema, mapper, fields and table of a stream, from its column declarations. */
export function deriveColumns(def: ColumnsDef, kind: IdentityKind): Derived {
  const shape: Record<string, z.ZodType> = { [def.idField]: kind.idSchema, ...def.raw };
  const fields: Record<string, string> = {};
  const types: Record<string, ColumnType> = {};
  const facts: Record<string, ColumnFacts> = {};
  const personal: Record<string, PersonalKind> = {};
  const docs: Record<string, ColumnDoc> = {};
  const columns = Object.entries(def.table.columns);
  for (const [name, column] of columns) {
    for (const [field, schema] of Object.entries(column.raw)) {
      if (field in shape && shape[field] !== schema) throw new Error(`${def.table.name}.${name}: raw field ${field} is declared twice`);
      shape[field] = schema;
    }
    if (column.field !== undefined) fields[name] = column.field;
    types[name] = column.type;
    facts[name] = {
      type: column.type,
      reads: column.reads,
      ...(column.personal ? { personal: column.personal } : {}),
      ...(column.filledByRequest ? { filledByRequest: true } : {}),
    };
    if (column.personal) personal[name] = column.personal;
    docs[name] = { reads: column.reads, ...(column.doc ? { doc: column.doc } : {}) };
  }
  if (kind.modifiedOn) shape.ModifiedOn = optDateTime;
  const idField = def.idField;
  const map = (r: RawRecord): MappedRow => {
    const values: Record<string, unknown> = {};
    for (const [name, column] of columns) values[name] = column.value(r);
    return {
      id: String(r[idField]),
      sourceModifiedAt: kind.modifiedOn ? toTimestamp(r.ModifiedOn as string | null | undefined) : null,
      columns: values,
    };
  };
  const table: TableDef = { name: def.table.name, idType: kind.idType, columns: types, docs };
  if (def.table.indexes) table.indexes = def.table.indexes;
  if (def.table.managed) table.managed = def.table.managed;
  if (Object.keys(personal).length > 0) table.personal = personal;
  return { raw: z.looseObject(shape), map, fields, table, columnFacts: facts };
}
