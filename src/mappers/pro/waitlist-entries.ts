import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { optDate, optText, orNull, toDate } from '../common.ts';
import { optProId, proId } from './common.ts';

/**
 * The read shape the spec shows: waitlistId, patient { firstName }, eventType
 * { name }, dateFrom, dateTo. The write shape's fields (providerIds,
 * daysOfWeek, timesOfDay, comments) and the nested ids are read when present.
 */
export const waitlistEntryRaw = z.looseObject({
  waitlistId: proId,
  patient: z.looseObject({ patientId: optProId, firstName: optText, lastName: optText }).nullish(),
  eventType: z.looseObject({ eventTypeId: optProId, name: optText }).nullish(),
  patientId: optProId,
  eventTypeId: optProId,
  dateFrom: optDate,
  dateTo: optDate,
  providerIds: z.array(proId).nullish(),
  daysOfWeek: optText,
  timesOfDay: optText,
  comments: optText,
});

export function mapWaitlistEntry(r: z.infer<typeof waitlistEntryRaw>): MappedRow {
  return {
    id: String(r.waitlistId),
    sourceModifiedAt: null,
    columns: {
      patient_id: r.patient?.patientId ?? r.patientId ?? null,
      patient_first_name: orNull(r.patient?.firstName),
      patient_last_name: orNull(r.patient?.lastName),
      event_type_id: r.eventType?.eventTypeId ?? r.eventTypeId ?? null,
      event_type_name: orNull(r.eventType?.name),
      date_from: toDate(r.dateFrom),
      date_to: toDate(r.dateTo),
      provider_ids: orNull(r.providerIds),
      days_of_week: orNull(r.daysOfWeek),
      times_of_day: orNull(r.timesOfDay),
      comments: orNull(r.comments),
    },
  };
}
