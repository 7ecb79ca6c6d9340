import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optDate, optDateTime, optDecimal, optId, orNull, toDate, toDecimal, toTimestamp } from '../common.ts';

export const giftCertificateRaw = z.looseObject({
  GiftCertificateId: opaqueId,
  CompanyId: optId,
  CustomerId: optId,
  Amount: optDecimal,
  Balance: optDecimal,
  IssuedOn: optDate,
  ModifiedOn: optDateTime,
});

export function mapGiftCertificate(r: z.infer<typeof giftCertificateRaw>): MappedRow {
  return {
    id: r.GiftCertificateId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      customer_id: orNull(r.CustomerId),
      amount: toDecimal(r.Amount),
      balance: toDecimal(r.Balance),
      issued_on: toDate(r.IssuedOn),
    },
  };
}
