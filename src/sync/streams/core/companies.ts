import { companyRaw, mapCompany } from '../../../mappers/core/companies.ts';
import { defineRestStream } from '../rest.ts';

/** Locations of the account. A short list: read whole on every run. */
export default defineRestStream({
  resource: 'companies',
  path: '/companies',
  idField: 'CompanyId',
  mode: 'full',
  variants: ['core', 'subset'],
  raw: companyRaw,
  map: mapCompany,
  fields: { company_name: 'CompanyName', is_active: 'IsActive' },
  table: { name: 'companies', idType: 'text', columns: { company_name: 'text', is_active: 'boolean' } },
});
