import { mapOrder, orderRaw } from '../../../mappers/core/orders.ts';
import { defineRestStream } from '../rest.ts';

/** Orders. Webhooks: Order.Created / Order.Updated point to orders/{id}. */
export default defineRestStream({
  resource: 'orders',
  path: '/orders',
  idField: 'OrderId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  raw: orderRaw,
  map: mapOrder,
  fields: { company_id: 'CompanyId', customer_id: 'CustomerId', order_date: 'OrderDate', total: 'Total' },
  recordPath: (id) => `/orders/${encodeURIComponent(id)}`,
  table: {
    name: 'orders',
    idType: 'text',
    columns: { company_id: 'text', customer_id: 'text', order_date: 'timestamp', total: 'numeric' },
  },
});
