import { z } from 'zod';
import { optText, orNull, toTimestamp } from '../common.ts';
import { optProId, proId } from './common.ts';

/** GET scheduling/availability/providers: one entry per provider offering the event type. */
export const providerEntryRaw = z.looseObject({
  provider: z.looseObject({ providerId: proId, firstName: optText, lastName: optText }),
});

export interface ProviderEntryRow {
  providerId: number;
  firstName: string | null;
  lastName: string | null;
}

export function mapProviderEntry(r: z.infer<typeof providerEntryRaw>): ProviderEntryRow {
  return { providerId: r.provider.providerId, firstName: orNull(r.provider.firstName), lastName: orNull(r.provider.lastName) };
}

const slotTime = z.string().refine((v) => toTimestamp(v) !== null, 'expected a date-time YYYY-MM-DDThh:mm:ss');

/**
 * GET scheduling/availability/slots: one group per provider. The spec does not
 * show how a group names its provider; providerId, or provider.providerId, is
 * read when present.
 */
export const slotGroupRaw = z.looseObject({
  providerId: optProId,
  provider: z.looseObject({ providerId: optProId }).nullish(),
  slots: z.array(slotTime),
});

export interface SlotGroupRow {
  providerId: number | null;
  /** Wall-clock slot starts as PostgreSQL timestamps, sorted and distinct. */
  slots: string[];
}

export function mapSlotGroup(r: z.infer<typeof slotGroupRaw>): SlotGroupRow {
  const slots = [...new Set(r.slots.map((s) => toTimestamp(s)!))].sort();
  return { providerId: r.providerId ?? r.provider?.providerId ?? null, slots };
}
