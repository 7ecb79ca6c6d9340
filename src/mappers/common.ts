/**
 * Field schemas and converters shared by the mappers. Raw schemas are
 * passthrough (z.looseObject): fields pmsync does not know are kept in `raw`.
 * A value of the wrong type fails validation and the record is set aside.
 */
import { z } from 'zod';

/** Opaque Core id: kept exactly as received, never parsed. */
export const opaqueId = z.string().min(1, 'id is empty').max(512);
export const optId = opaqueId.nullish();
export const optText = z.string().nullish();
export const optBool = z.boolean().nullish();
export const optInt = z.number().int().nullish();

const DATE_PREFIX = /^(\d{4})-(\d{2})-(\d{2})/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

function realDate(y: number, m: number, d: number): boolean {
  const dt = new Date(Date.UTC(y, m - 1, d));
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === m - 1 && dt.getUTCDate() === d;
}

/** A date, or a date-time whose date part is used. */
export const optDate = z
  .string()
  .refine((v) => {
    const m = DATE_PREFIX.exec(v);
    return m !== null && realDate(Number(m[1]), Number(m[2]), Number(m[3])) && (v.length === 10 || DATETIME.test(v));
  }, 'expected a date YYYY-MM-DD')
  .nullish();

export const optDateTime = z
  .string()
  .refine((v) => {
    if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return realDate(Number(v.slice(0, 4)), Number(v.slice(5, 7)), Number(v.slice(8, 10)));
    const m = DATETIME.exec(v);
    return (
      m !== null && realDate(Number(m[1]), Number(m[2]), Number(m[3])) && Number(m[4]) < 24 && Number(m[5]) < 60 && Number(m[6] ?? 0) < 60
    );
  }, 'expected a date-time YYYY-MM-DDThh:mm:ss')
  .nullish();

/** Money and other decimals may arrive as numbers or numeric strings. */
export const optDecimal = z.union([z.number().finite(), z.string().regex(/^-?\d+(\.\d+)?$/, 'expected a decimal number')]).nullish();

export function toDate(v: string | null | undefined): string | null {
  return v ? v.slice(0, 10) : null;
}

/**
 * A date-time as PostgreSQL `timestamp`: wall-clock time as the API sent it.
 * A value carrying a zone or offset is converted to UTC first.
 */
export function toTimestamp(v: string | null | undefined): string | null {
  if (!v) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${v}T00:00:00`;
  const m = DATETIME.exec(v);
  if (!m) return null;
  if (m[8]) return new Date(v.replace(' ', 'T')).toISOString().slice(0, 23);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${m[7] ?? ''}`;
}

export function toDecimal(v: number | string | null | undefined): string | null {
  return v === null || v === undefined ? null : String(v);
}

export function orNull<T>(v: T | null | undefined): T | null {
  return v ?? null;
}

/** Describes a validation failure in one line: "IsActive: expected boolean, received string". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`)
    .join('; ');
}
