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
      waitlist_id: proId('waitlistId', { doc: 'The waitlist entry the slot was offered to: pro_waitlist_entries.id.' }),
      provider_id: proId('providerId', { doc: 'The provider of the slot (a Pro provider id).' }),
      event_type_id: proId('eventTypeId', { doc: 'The kind of appointment: pro_event_types.id.' }),
      slot_date: timestamp('slotDate', { doc: "When the slot starts, in the practice's wall-clock time." }),
      status: text('status', { doc: 'The state of the slot offer, as the API names it.' }),
    },
  },
});
