import { bool, id, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'employees',
  path: '/employees',
  idField: 'EmployeeId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  table: {
    name: 'employees',
    columns: {
      company_id: id('CompanyId'),
      first_name: text('FirstName', { personal: 'name' }),
      last_name: text('LastName', { personal: 'name' }),
      email: text('Email', { personal: 'email' }),
      is_active: bool('IsActive'),
    },
  },
});
