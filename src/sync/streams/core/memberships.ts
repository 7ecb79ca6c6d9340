import { mapMembership, membershipRaw } from '../../../mappers/core/memberships.ts';
import { defineRestStream } from '../rest.ts';

/** Customers' membership enrollments. */
export default defineRestStream({
  resource: 'memberships',
  path: '/memberships',
  idField: 'MembershipId',
  mode: 'incremental',
  variants: ['core'],
  raw: membershipRaw,
  map: mapMembership,
  fields: {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    membership_program: 'MembershipProgram',
    bill_amount: 'BillAmount',
    next_bill_date: 'NextBillDate',
    last_bill_date: 'LastBillDate',
    sold_on: 'SoldOn',
  },
  table: {
    name: 'memberships',
    idType: 'text',
    columns: {
      company_id: 'text',
      customer_id: 'text',
      membership_program: 'text',
      bill_amount: 'numeric',
      next_bill_date: 'date',
      last_bill_date: 'date',
      sold_on: 'date',
    },
  },
});
