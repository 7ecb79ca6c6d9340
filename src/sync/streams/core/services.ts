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
      company_id: id('CompanyId'),
      name: text('Name'),
      price: numeric('Price'),
      duration_minutes: integer('DurationMinutes'),
      is_active: bool('IsActive'),
    },
  },
});
