import { bool, id, integer, numeric, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'services',
  path: '/services',
  idField: 'ServiceId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  table: {
    name: 'services',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) offering it: companies.id.' }),
      name: text('Name', { doc: 'The service name.' }),
      price: numeric('Price', { doc: 'The list price.' }),
      duration_minutes: integer('DurationMinutes', { doc: 'How long the service takes, in minutes.' }),
      is_active: bool('IsActive', { doc: 'Whether the service can be booked.' }),
    },
  },
});
