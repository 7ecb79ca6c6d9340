/**
 * The column vocabulary of stream files: each typed column of a resource table
 * is declared once, as its name, its kind and the raw field it is read from
 * (`first_name: text('FirstName')`). From these declarations the stream gets
 * its raw zod schema, its mapper, its `fields` (drift reports, per-source
 * column overrides) and its table's column types; `npm run tables` writes the
 * Prisma models and the migrations from the same declarations.
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
import type { ColumnType, ManagedColumn, MappedRow, TableDef } from './types.ts';

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
}

export interface ColumnOptions {
  /**
   * The request knows the value better than the record (a fan-out's parent
   * key): the record's field is read when present, the request's value wins,
   * and the column cannot be remapped.
   */
  filledByRequest?: boolean;
}

function fieldColumn(
  type: ColumnType,
  schema: z.ZodType,
  convert: (v: never) => unknown,
  field: string,
  options: ColumnOptions = {},
): Column {
  const column: Column = { type, raw: { [field]: schema }, value: (r) => convert(r[field] as never) };
  if (!options.filledByRequest) column.field = field;
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

/**
 * The escape hatch: a column computed from the whole (validated) record, e.g.
 * from a nested object. The raw fields it reads are declared by the stream
 * (`raw`) so that several computed columns can share them.
 */
export function computed<R>(type: ColumnType, value: (record: R) => unknown): Column {
  return { type, raw: {}, value: value as unknown as (record: RawRecord) => unknown };
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
  const columns = Object.entries(def.table.columns);
  for (const [name, column] of columns) {
    for (const [field, schema] of Object.entries(column.raw)) {
      if (field in shape && shape[field] !== schema) throw new Error(`${def.table.name}.${name}: raw field ${field} is declared twice`);
      shape[field] = schema;
    }
    if (column.field !== undefined) fields[name] = column.field;
    types[name] = column.type;
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
  const table: TableDef = { name: def.table.name, idType: kind.idType, columns: types };
  if (def.table.indexes) table.indexes = def.table.indexes;
  if (def.table.managed) table.managed = def.table.managed;
  return { raw: z.looseObject(shape), map, fields, table };
}
