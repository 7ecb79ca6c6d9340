import { z } from 'zod';
import { optText } from '../../../mappers/common.ts';
import { optProId, proId as proIdSchema } from '../../../mappers/pro/common.ts';
import { computed, date, jsonb, text } from '../../columns.ts';
import { defineProFanOut } from './stream.ts';

/**
 * The read shape the spec shows: waitlistId, patient { firstName }, eventType
 * { name }, dateFrom, dateTo. The write shape's fields (providerIds,
 * daysOfWeek, timesOfDay, comments) and the nested ids are read when present.
 * The patient and event type columns come from the nested object, or else
 * the flat id, so they are computed from these fields.
 */
const raw = {
  patient: z.looseObject({ patientId: optProId, firstName: optText, lastName: optText }).nullish(),
  eventType: z.looseObject({ eventTypeId: optProId, name: optText }).nullish(),
  patientId: optProId,
  eventTypeId: optProId,
};
type Entry = { [K in keyof typeof raw]: z.infer<(typeof raw)[K]> };

/**
 * Waitlist entries. The API cannot list them, only read one by id, so pmsync
 * reads the entries it knows of: those named by a current waitlist slot and
 * those listed in the source's `waitlistIds`. An entry answering 404 is marked
 * not seen.
 */
export default defineProFanOut({
  resource: 'waitlist',
  idField: 'waitlistId',
  read: { record: (waitlistId) => `/waitlist/${waitlistId}` },
  incremental: false,
  keyColumn: 'id',
  keys: async (db, q) => {
    const res = await db.query<{ id: string }>(
      `SELECT id FROM (
         SELECT waitlist_id AS id FROM pro_waitlist_slots WHERE source = $1 AND waitlist_id IS NOT NULL AND not_seen_since IS NULL
         UNION SELECT unnest($2::bigint[])
       ) known
       WHERE id > $3 ORDER BY id LIMIT $4`,
      [q.source.name, q.source.waitlistIds, q.after, q.limit],
    );
    return res.rows.map((r) => Number(r.id));
  },
  raw,
  table: {
    name: 'pro_waitlist_entries',
    columns: {
      patient_id: computed('bigint', (r: Entry) => r.patient?.patientId ?? r.patientId ?? null, {
        reads: ['patient.patientId', 'patientId'],
        doc: 'The patient waiting: pro_patients.id.',
      }),
      patient_first_name: computed('text', (r: Entry) => r.patient?.firstName ?? null, {
        reads: ['patient.firstName'],
        doc: "The waiting patient's first name.",
        personal: 'name',
      }),
      patient_last_name: computed('text', (r: Entry) => r.patient?.lastName ?? null, {
        reads: ['patient.lastName'],
        doc: "The waiting patient's last name.",
        personal: 'name',
      }),
      event_type_id: computed('bigint', (r: Entry) => r.eventType?.eventTypeId ?? r.eventTypeId ?? null, {
        reads: ['eventType.eventTypeId', 'eventTypeId'],
        doc: 'The kind of appointment wanted: pro_event_types.id.',
      }),
      event_type_name: computed('text', (r: Entry) => r.eventType?.name ?? null, {
        reads: ['eventType.name'],
        doc: 'The name of the kind of appointment wanted.',
      }),
      date_from: date('dateFrom', { doc: 'The first date the patient can come.' }),
      date_to: date('dateTo', { doc: 'The last date the patient can come.' }),
      provider_ids: jsonb('providerIds', z.array(proIdSchema), {
        doc: 'The providers the patient would see (JSON array of Pro provider ids).',
      }),
      days_of_week: text('daysOfWeek', { doc: 'The days of the week the patient can come, as the API writes them.' }),
      times_of_day: text('timesOfDay', { doc: 'The times of day the patient can come, as the API writes them.' }),
      comments: text('comments', { personal: 'free text', doc: 'Free-text notes on the entry.' }),
    },
  },
});
