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
      company_id: id('CompanyId', { doc: 'The company (location) the employee works at: companies.id.' }),
      first_name: text('FirstName', { personal: 'name', doc: "The employee's first name." }),
      last_name: text('LastName', { personal: 'name', doc: "The employee's last name." }),
      email: text('Email', { personal: 'email', doc: "The employee's email address." }),
      is_active: bool('IsActive', { doc: 'Whether the employee is active at the source.' }),
    },
  },
});
