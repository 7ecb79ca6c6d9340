import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { optDateTime, orNull, toTimestamp } from '../common.ts';
import { optProId, proId } from './common.ts';

/**
 * apptDate is ISO 8601 without a zone: the practice's wall-clock time, stored as timestamp.
 * The per-patient list the spec shows returns appointmentId and apptDate only;
 * the fan-out sets patient_id from the patient it asked about (src/sync/pro-runner.ts).
 */
export const proAppointmentRaw = z.looseObject({
  appointmentId: proId,
  apptDate: optDateTime,
  patientId: optProId,
  eventTypeId: optProId,
  providerId: optProId,
});

export function mapProAppointment(r: z.infer<typeof proAppointmentRaw>): MappedRow {
  return {
    id: String(r.appointmentId),
    sourceModifiedAt: null,
    columns: {
      patient_id: orNull(r.patientId),
      event_type_id: orNull(r.eventTypeId),
      provider_id: orNull(r.providerId),
      appt_date: toTimestamp(r.apptDate),
    },
  };
}
