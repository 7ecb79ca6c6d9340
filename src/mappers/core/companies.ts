import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optBool, optDateTime, optText, orNull, toTimestamp } from '../common.ts';

/** A company is a location of the account. */
export const companyRaw = z.looseObject({
  CompanyId: opaqueId,
  CompanyName: optText,
  IsActive: optBool,
  ModifiedOn: optDateTime,
});

export function mapCompany(r: z.infer<typeof companyRaw>): MappedRow {
  return {
    id: r.CompanyId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: { company_name: orNull(r.CompanyName), is_active: orNull(r.IsActive) },
  };
}
