import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { optDateTime, optText, orNull, toTimestamp } from '../common.ts';
import { optProId, proId } from './common.ts';

/**
 * The spec does not show the waitlist slot fields. These are the simulator's
 * names (docs/simulator-contract.md), read when present; the record is kept
 * whole in raw either way.
 */
export const waitlistSlotRaw = z.looseObject({
  waitlistSlotId: proId,
  waitlistId: optProId,
  providerId: optProId,
  eventTypeId: optProId,
  slotDate: optDateTime,
  status: optText,
});

export function mapWaitlistSlot(r: z.infer<typeof waitlistSlotRaw>): MappedRow {
  return {
    id: String(r.waitlistSlotId),
    sourceModifiedAt: null,
    columns: {
      waitlist_id: orNull(r.waitlistId),
      provider_id: orNull(r.providerId),
      event_type_id: orNull(r.eventTypeId),
      slot_date: toTimestamp(r.slotDate),
      status: orNull(r.status),
    },
  };
}
