import { id, numeric, timestamp } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Orders. Webhooks: Order.Created / Order.Updated point to orders/{id}. */
export default defineRestStream({
  resource: 'orders',
  path: '/orders',
  idField: 'OrderId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  recordPath: (id) => `/orders/${encodeURIComponent(id)}`,
  table: {
    name: 'orders',
    columns: { company_id: id('CompanyId'), customer_id: id('CustomerId'), order_date: timestamp('OrderDate'), total: numeric('Total') },
  },
});
