import { mapService, serviceRaw } from '../../../mappers/core/services.ts';
import { defineRestStream } from '../rest.ts';

export default defineRestStream({
  resource: 'services',
  path: '/services',
  idField: 'ServiceId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  raw: serviceRaw,
  map: mapService,
  fields: { company_id: 'CompanyId', name: 'Name', price: 'Price', duration_minutes: 'DurationMinutes', is_active: 'IsActive' },
  table: {
    name: 'services',
    idType: 'text',
    columns: { company_id: 'text', name: 'text', price: 'numeric', duration_minutes: 'integer', is_active: 'boolean' },
  },
});
