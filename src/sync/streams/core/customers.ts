import { bool, date, id, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Customers (patients). Webhooks: Patient.Created / Patient.Updated point to customers/{id}. */
export default defineRestStream({
  resource: 'customers',
  path: '/customers',
  idField: 'CustomerId',
  mode: 'incremental',
  variants: ['core'],
  recordPath: (id) => `/customers/${encodeURIComponent(id)}`,
  table: {
    name: 'customers',
    columns: {
      company_id: id('CompanyId'),
      first_name: text('FirstName', { personal: 'name' }),
      last_name: text('LastName', { personal: 'name' }),
      email: text('Email', { personal: 'email' }),
      mobile_phone: text('MobilePhone', { personal: 'phone' }),
      is_active: bool('IsActive'),
      birthday: date('Birthday', { personal: 'birth date' }),
      last_visit: date('LastVisit'),
    },
  },
});
