import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optBool, optDateTime, optDecimal, optId, optInt, optText, orNull, toDecimal, toTimestamp } from '../common.ts';

export const serviceRaw = z.looseObject({
  ServiceId: opaqueId,
  CompanyId: optId,
  Name: optText,
  Price: optDecimal,
  DurationMinutes: optInt,
  IsActive: optBool,
  ModifiedOn: optDateTime,
});

export function mapService(r: z.infer<typeof serviceRaw>): MappedRow {
  return {
    id: r.ServiceId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      name: orNull(r.Name),
      price: toDecimal(r.Price),
      duration_minutes: orNull(r.DurationMinutes),
      is_active: orNull(r.IsActive),
    },
  };
}
