import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optDate, optDateTime, optDecimal, optId, optText, orNull, toDate, toDecimal, toTimestamp } from '../common.ts';

/**
 * A customer's enrollment. It carries the program's display name only, and the
 * recurring BillAmount; there is no ProgramName or enrollment fee here (plan
 * details live in membership_programs, joined by display name).
 */
export const membershipRaw = z.looseObject({
  MembershipId: opaqueId,
  CompanyId: optId,
  CustomerId: optId,
  MembershipProgram: optText,
  BillAmount: optDecimal,
  NextBillDate: optDate,
  LastBillDate: optDate,
  SoldOn: optDate,
  ModifiedOn: optDateTime,
});

export function mapMembership(r: z.infer<typeof membershipRaw>): MappedRow {
  return {
    id: r.MembershipId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      customer_id: orNull(r.CustomerId),
      membership_program: orNull(r.MembershipProgram),
      bill_amount: toDecimal(r.BillAmount),
      next_bill_date: toDate(r.NextBillDate),
      last_bill_date: toDate(r.LastBillDate),
      sold_on: toDate(r.SoldOn),
    },
  };
}
