import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optDateTime, optDecimal, optId, orNull, toDecimal, toTimestamp } from '../common.ts';

export const orderRaw = z.looseObject({
  OrderId: opaqueId,
  CompanyId: optId,
  CustomerId: optId,
  OrderDate: optDateTime,
  Total: optDecimal,
  ModifiedOn: optDateTime,
});

export function mapOrder(r: z.infer<typeof orderRaw>): MappedRow {
  return {
    id: r.OrderId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      customer_id: orNull(r.CustomerId),
      order_date: toTimestamp(r.OrderDate),
      total: toDecimal(r.Total),
    },
  };
}
