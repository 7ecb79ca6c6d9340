import { mapWaitlistEntry, waitlistEntryRaw } from '../../../mappers/pro/waitlist-entries.ts';
import { defineProFanOut } from './stream.ts';

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
  raw: waitlistEntryRaw,
  map: mapWaitlistEntry,
  fields: {
    date_from: 'dateFrom',
    date_to: 'dateTo',
    provider_ids: 'providerIds',
    days_of_week: 'daysOfWeek',
    times_of_day: 'timesOfDay',
    comments: 'comments',
  },
  table: {
    name: 'pro_waitlist_entries',
    idType: 'bigint',
    columns: {
      patient_id: 'bigint',
      patient_first_name: 'text',
      patient_last_name: 'text',
      event_type_id: 'bigint',
      event_type_name: 'text',
      date_from: 'date',
      date_to: 'date',
      provider_ids: 'jsonb',
      days_of_week: 'text',
      times_of_day: 'text',
      comments: 'text',
    },
  },
});
