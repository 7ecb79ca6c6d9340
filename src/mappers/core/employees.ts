import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optBool, optDateTime, optId, optText, orNull, toTimestamp } from '../common.ts';

export const employeeRaw = z.looseObject({
  EmployeeId: opaqueId,
  CompanyId: optId,
  FirstName: optText,
  LastName: optText,
  Email: optText,
  IsActive: optBool,
  ModifiedOn: optDateTime,
});

export function mapEmployee(r: z.infer<typeof employeeRaw>): MappedRow {
  return {
    id: r.EmployeeId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      first_name: orNull(r.FirstName),
      last_name: orNull(r.LastName),
      email: orNull(r.Email),
      is_active: orNull(r.IsActive),
    },
  };
}
