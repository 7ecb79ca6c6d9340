import { proId, timestamp } from '../../columns.ts';
import { defineProFanOut } from './stream.ts';

/**
 * Appointments exist only per patient: one list per patient. Between full
 * sweeps a pass reads only patients that are new or whose record changed:
 * each patient row keeps the content_hash it had when its appointments were
 * last read, and a differing hash selects it. A booking that leaves the
 * patient record unchanged is therefore seen at the next full sweep
 * (appointments.fullSweepHours).
 */
export default defineProFanOut({
  resource: 'appointments',
  idField: 'appointmentId',
  read: { list: (patientId) => `/patients/${patientId}/appointments` },
  incremental: true,
  // The list returns appointmentId and apptDate only: patient_id is the patient it was listed under.
  keyColumn: 'patient_id',
  coversTable: true,
  keys: async (db, q) => {
    const res = await db.query<{ id: string }>(
      `SELECT id FROM pro_patients
       WHERE source = $1 AND id > $2 AND not_seen_since IS NULL
         AND (NOT $3 OR appointments_read_hash IS DISTINCT FROM content_hash)
         AND ($4::timestamptz IS NULL OR synced_at > $4)
       ORDER BY id LIMIT $5`,
      [q.source.name, q.after, q.changedOnly, q.changedSince, q.limit],
    );
    return res.rows.map((r) => Number(r.id));
  },
  // A patient rewritten by a concurrent patients run between the read and this
  // mark keeps its new hash marked as read; the next full sweep covers it.
  markRead: async (db, source, keys) => {
    await db.query(
      'UPDATE pro_patients SET appointments_read_hash = content_hash, appointments_read_at = now() WHERE source = $1 AND id = ANY($2::bigint[])',
      [source.name, keys],
    );
  },
  table: {
    name: 'pro_appointments',
    columns: {
      patient_id: proId('patientId', { filledByRequest: true, doc: 'The patient: pro_patients.id.' }),
      event_type_id: proId('eventTypeId', { doc: 'The kind of appointment: pro_event_types.id.' }),
      provider_id: proId('providerId', { doc: 'The provider seeing the patient (a Pro provider id).' }),
      // ISO 8601 without a zone: the practice's wall-clock time.
      appt_date: timestamp('apptDate', { doc: "When the appointment starts, in the practice's wall-clock time." }),
    },
    indexes: [['source', 'patient_id']],
  },
});
