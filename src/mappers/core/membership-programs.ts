import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optDateTime, optId, optText, orNull, toTimestamp } from '../common.ts';

/** The catalog of membership plans. */
export const membershipProgramRaw = z.looseObject({
  MembershipProgramId: opaqueId,
  CompanyId: optId,
  ProgramName: optText,
  Description: optText,
  ModifiedOn: optDateTime,
});

export function mapMembershipProgram(r: z.infer<typeof membershipProgramRaw>): MappedRow {
  return {
    id: r.MembershipProgramId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: { company_id: orNull(r.CompanyId), program_name: orNull(r.ProgramName), description: orNull(r.Description) },
  };
}
