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
    columns: { company_id: id('CompanyId'), name: text('Name'), price: numeric('Price'), is_active: bool('IsActive') },
  },
});
