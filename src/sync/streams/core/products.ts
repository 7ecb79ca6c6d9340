import { mapProduct, productRaw } from '../../../mappers/core/products.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'products',
  path: '/products',
  idField: 'ProductId',
  mode: 'incremental',
  variants: ['core'],
  raw: productRaw,
  map: mapProduct,
  fields: { company_id: 'CompanyId', name: 'Name', price: 'Price', is_active: 'IsActive' },
  table: { name: 'products', idType: 'text', columns: { company_id: 'text', name: 'text', price: 'numeric', is_active: 'boolean' } },
});
