import { proId, text, timestamp } from '../../columns.ts';
import { defineProList } from './stream.ts';

/**
 * Waitlist slots that have been offered, read whole on every run (never closed
 * by pmsync). The spec does not show their fields: these are the simulator's
 * names (docs/simulator-contract.md), read when present.
 */
export default defineProList({
  resource: 'waitlist-slots',
  path: '/waitlist-slots',
  idField: 'waitlistSlotId',
  table: {
    name: 'pro_waitlist_slots',
    columns: {
      waitlist_id: proId('waitlistId'),
      provider_id: proId('providerId'),
      event_type_id: proId('eventTypeId'),
      slot_date: timestamp('slotDate'),
      status: text('status'),
    },
  },
});
