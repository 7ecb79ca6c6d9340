import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optBool, optDateTime, optDecimal, optId, optText, orNull, toDecimal, toTimestamp } from '../common.ts';

export const productRaw = z.looseObject({
  ProductId: opaqueId,
  CompanyId: optId,
  Name: optText,
  Price: optDecimal,
  IsActive: optBool,
  ModifiedOn: optDateTime,
});

export function mapProduct(r: z.infer<typeof productRaw>): MappedRow {
  return {
    id: r.ProductId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: { company_id: orNull(r.CompanyId), name: orNull(r.Name), price: toDecimal(r.Price), is_active: orNull(r.IsActive) },
  };
}
