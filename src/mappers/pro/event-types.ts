import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { optText, orNull } from '../common.ts';
import { proId } from './common.ts';

export const eventTypeRaw = z.looseObject({
  eventTypeId: proId,
  name: optText,
});

export function mapEventType(r: z.infer<typeof eventTypeRaw>): MappedRow {
  return { id: String(r.eventTypeId), sourceModifiedAt: null, columns: { name: orNull(r.name) } };
}
