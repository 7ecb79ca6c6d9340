import { mapWaitlistSlot, waitlistSlotRaw } from '../../../mappers/pro/waitlist-slots.ts';
import { defineProList } from './stream.ts';

/** Waitlist slots that have been offered, read whole on every run (never closed by pmsync). */
export default defineProList({
  resource: 'waitlist-slots',
  path: '/waitlist-slots',
  idField: 'waitlistSlotId',
  raw: waitlistSlotRaw,
  map: mapWaitlistSlot,
  fields: { waitlist_id: 'waitlistId', provider_id: 'providerId', event_type_id: 'eventTypeId', slot_date: 'slotDate', status: 'status' },
  table: {
    name: 'pro_waitlist_slots',
    idType: 'bigint',
    columns: { waitlist_id: 'bigint', provider_id: 'bigint', event_type_id: 'bigint', slot_date: 'timestamp', status: 'text' },
  },
});
