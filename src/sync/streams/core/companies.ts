import { bool, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Locations of the account. A short list: read whole on every run. */
export default defineRestStream({
  resource: 'companies',
  path: '/companies',
  idField: 'CompanyId',
  mode: 'full',
  variants: ['core', 'subset'],
  table: {
    name: 'companies',
    columns: {
      company_name: text('CompanyName', { doc: 'The company (location) name.' }),
      is_active: bool('IsActive', { doc: 'Whether the company is active at the source.' }),
    },
  },
});
