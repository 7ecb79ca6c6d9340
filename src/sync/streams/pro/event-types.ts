import { text } from '../../columns.ts';
import { defineProList } from './stream.ts';

/** Event types: a short catalog, read whole on every run. */
export default defineProList({
  resource: 'event-types',
  path: '/event-types',
  idField: 'eventTypeId',
  table: { name: 'pro_event_types', columns: { name: text('name', { doc: 'The event type (kind of appointment) name.' }) } },
});
