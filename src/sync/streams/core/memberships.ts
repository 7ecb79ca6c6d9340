import { date, id, numeric, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Customers' membership enrollments. */
export default defineRestStream({
  resource: 'memberships',
  path: '/memberships',
  idField: 'MembershipId',
  mode: 'incremental',
  variants: ['core'],
  table: {
    name: 'memberships',
    columns: {
      company_id: id('CompanyId'),
      customer_id: id('CustomerId'),
      // The program's display name: plan details live in membership_programs, joined by that name.
      membership_program: text('MembershipProgram'),
      // The recurring amount; enrollments carry no enrollment fee.
      bill_amount: numeric('BillAmount'),
      next_bill_date: date('NextBillDate'),
      last_bill_date: date('LastBillDate'),
      sold_on: date('SoldOn'),
    },
    indexes: [['source', 'customer_id']],
  },
});
