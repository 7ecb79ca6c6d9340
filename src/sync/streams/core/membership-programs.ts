import { mapMembershipProgram, membershipProgramRaw } from '../../../mappers/core/membership-programs.ts';
import { defineRestStream } from '../rest.ts';

/** The catalog of membership plans: small, read whole on every run. */
export default defineRestStream({
  resource: 'membershipprograms',
  path: '/membershipprograms',
  idField: 'MembershipProgramId',
  mode: 'full',
  variants: ['core'],
  raw: membershipProgramRaw,
  map: mapMembershipProgram,
  fields: { company_id: 'CompanyId', program_name: 'ProgramName', description: 'Description' },
  table: { name: 'membership_programs', idType: 'text', columns: { company_id: 'text', program_name: 'text', description: 'text' } },
});
