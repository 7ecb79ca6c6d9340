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
      first_name: text('firstName', { personal: 'name' }),
      last_name: text('lastName', { personal: 'name' }),
      dob: date('dob', { personal: 'birth date' }),
      cell_phone: text('cellPhone', { personal: 'phone' }),
    },
    managed: {
      appointments_read_hash: {
        type: 'text',
        copiesContentHash: true,
        doc: 'content_hash of this row when its appointments were last read: a differing hash means "read them again".',
      },
      appointments_read_at: { type: 'timestamptz' },
    },
  },
});
