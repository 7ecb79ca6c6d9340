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
      company_id: id('CompanyId', { doc: 'The company (location) that sold it: companies.id.' }),
      customer_id: id('CustomerId', { doc: 'The member: customers.id.' }),
      // The program's display name: plan details live in membership_programs, joined by that name.
      membership_program: text('MembershipProgram', {
        doc: "The program's display name; membership_details joins it to membership_programs.",
      }),
      // The recurring amount; enrollments carry no enrollment fee.
      bill_amount: numeric('BillAmount', { doc: 'The recurring amount billed each period.' }),
      next_bill_date: date('NextBillDate', { doc: 'The date of the next bill; past or empty for an ended membership.' }),
      last_bill_date: date('LastBillDate', { doc: 'The date of the last bill.' }),
      sold_on: date('SoldOn', { doc: 'The date the membership was sold.' }),
    },
    indexes: [['source', 'customer_id']],
  },
});
