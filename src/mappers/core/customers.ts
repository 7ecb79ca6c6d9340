import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optBool, optDate, optDateTime, optId, optText, orNull, toDate, toTimestamp } from '../common.ts';

export const customerRaw = z.looseObject({
  CustomerId: opaqueId,
  CompanyId: optId,
  FirstName: optText,
  LastName: optText,
  Email: optText,
  MobilePhone: optText,
  IsActive: optBool,
  Birthday: optDate,
  LastVisit: optDate,
  ModifiedOn: optDateTime,
});

export function mapCustomer(r: z.infer<typeof customerRaw>): MappedRow {
  return {
    id: r.CustomerId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      first_name: orNull(r.FirstName),
      last_name: orNull(r.LastName),
      email: orNull(r.Email),
      mobile_phone: orNull(r.MobilePhone),
      is_active: orNull(r.IsActive),
      birthday: toDate(r.Birthday),
      last_visit: toDate(r.LastVisit),
    },
  };
}
