import { bool, id, numeric, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'products',
  path: '/products',
  idField: 'ProductId',
  mode: 'incremental',
  variants: ['core'],
  table: {
    name: 'products',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) selling it: companies.id.' }),
      name: text('Name', { doc: 'The product name.' }),
      price: numeric('Price', { doc: 'The list price.' }),
      is_active: bool('IsActive', { doc: 'Whether the product is for sale.' }),
    },
  },
});
