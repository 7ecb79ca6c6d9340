import { id, numeric, timestamp } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Orders. */
export default defineRestStream({
  resource: 'orders',
  path: '/orders',
  idField: 'OrderId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  webhook: { events: ['Order.Created', 'Order.Updated'], recordUrl: 'orders/{id}' },
  table: {
    name: 'orders',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) of the sale: companies.id.' }),
      customer_id: id('CustomerId', { doc: 'The customer who bought: customers.id.' }),
      order_date: timestamp('OrderDate', { doc: "When the order was placed, in the source's wall-clock time." }),
      total: numeric('Total', { doc: 'The order total.' }),
    },
  },
});
