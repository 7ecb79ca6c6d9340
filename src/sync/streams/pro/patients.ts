import { date, text } from '../../columns.ts';
import { defineProList } from './stream.ts';

/**
 * Patients: no change filter exists, so the list is read whole on every run.
 * The spec names patientId, firstName and lastName; dob and cellPhone are its
 * filter names, read when present.
 */
export default defineProList({
  resource: 'patients',
  path: '/patients',
  idField: 'patientId',
  table: {
    name: 'pro_patients',
    columns: {
      first_name: text('firstName', { personal: 'name', doc: "The patient's first name." }),
      last_name: text('lastName', { personal: 'name', doc: "The patient's last name." }),
      dob: date('dob', { personal: 'birth date', doc: "The patient's date of birth." }),
      cell_phone: text('cellPhone', { personal: 'phone', doc: "The patient's cell phone number, as entered." }),
    },
    managed: {
      appointments_read_hash: {
        type: 'text',
        copiesContentHash: true,
        doc: 'content_hash of this row when its appointments were last read: a differing hash means "read them again".',
      },
      appointments_read_at: { type: 'timestamptz', doc: 'When its appointments were last read (database clock).' },
    },
  },
});
