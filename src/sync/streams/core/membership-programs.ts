import { id, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** The catalog of membership plans: small, read whole on every run. */
export default defineRestStream({
  resource: 'membershipprograms',
  path: '/membershipprograms',
  idField: 'MembershipProgramId',
  mode: 'full',
  variants: ['core'],
  // A migration also indexes (source, lower(btrim(program_name))) for the membership_details view.
  table: {
    name: 'membership_programs',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) offering the plan: companies.id.' }),
      program_name: text('ProgramName', { doc: "The plan's display name; memberships name their plan by it." }),
      description: text('Description', { doc: 'The plan as the practice describes it.' }),
    },
  },
});
