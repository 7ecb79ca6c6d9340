import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { optDate, optText, orNull, toDate } from '../common.ts';
import { proId } from './common.ts';

/** The spec names patientId, firstName and lastName; dob and cellPhone are its filter names, read when present. */
export const patientRaw = z.looseObject({
  patientId: proId,
  firstName: optText,
  lastName: optText,
  dob: optDate,
  cellPhone: optText,
});

export function mapPatient(r: z.infer<typeof patientRaw>): MappedRow {
  return {
    id: String(r.patientId),
    sourceModifiedAt: null,
    columns: { first_name: orNull(r.firstName), last_name: orNull(r.lastName), dob: toDate(r.dob), cell_phone: orNull(r.cellPhone) },
  };
}
