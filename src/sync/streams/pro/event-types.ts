import { eventTypeRaw, mapEventType } from '../../../mappers/pro/event-types.ts';
import { defineProList } from './stream.ts';

/** Event types: a short catalog, read whole on every run. */
export default defineProList({
  resource: 'event-types',
  path: '/event-types',
  idField: 'eventTypeId',
  raw: eventTypeRaw,
  map: mapEventType,
  fields: { name: 'name' },
  table: { name: 'pro_event_types', idType: 'bigint', columns: { name: 'text' } },
});
