import { mapPatient, patientRaw } from '../../../mappers/pro/patients.ts';
import { defineProList } from './stream.ts';

/** Patients: no change filter exists, so the list is read whole on every run. */
export default defineProList({
  resource: 'patients',
  path: '/patients',
  idField: 'patientId',
  raw: patientRaw,
  map: mapPatient,
  fields: { first_name: 'firstName', last_name: 'lastName', dob: 'dob', cell_phone: 'cellPhone' },
  table: {
    name: 'pro_patients',
    idType: 'bigint',
    columns: { first_name: 'text', last_name: 'text', dob: 'date', cell_phone: 'text' },
  },
});
