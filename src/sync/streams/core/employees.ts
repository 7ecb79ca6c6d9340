import { employeeRaw, mapEmployee } from '../../../mappers/core/employees.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'employees',
  path: '/employees',
  idField: 'EmployeeId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  raw: employeeRaw,
  map: mapEmployee,
  fields: { company_id: 'CompanyId', first_name: 'FirstName', last_name: 'LastName', email: 'Email', is_active: 'IsActive' },
  table: {
    name: 'employees',
    idType: 'text',
    columns: { company_id: 'text', first_name: 'text', last_name: 'text', email: 'text', is_active: 'boolean' },
  },
});
