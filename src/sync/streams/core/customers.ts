import { customerRaw, mapCustomer } from '../../../mappers/core/customers.ts';
import { defineRestStream } from '../rest.ts';

/** Customers (patients). Webhooks: Patient.Created / Patient.Updated point to customers/{id}. */
export default defineRestStream({
  resource: 'customers',
  path: '/customers',
  idField: 'CustomerId',
  mode: 'incremental',
  variants: ['core'],
  raw: customerRaw,
  map: mapCustomer,
  fields: {
    company_id: 'CompanyId',
    first_name: 'FirstName',
    last_name: 'LastName',
    email: 'Email',
    mobile_phone: 'MobilePhone',
    is_active: 'IsActive',
    birthday: 'Birthday',
    last_visit: 'LastVisit',
  },
  recordPath: (id) => `/customers/${encodeURIComponent(id)}`,
  table: {
    name: 'customers',
    idType: 'text',
    columns: {
      company_id: 'text',
      first_name: 'text',
      last_name: 'text',
      email: 'text',
      mobile_phone: 'text',
      is_active: 'boolean',
      birthday: 'date',
      last_visit: 'date',
    },
  },
});
