import { z } from 'zod';
import type { MappedRow } from '../../sync/types.ts';
import { opaqueId, optDateTime, optId, orNull, toTimestamp } from '../common.ts';

/** The spec names no appointment fields; these are read when present, everything stays in raw. */
export const appointmentRaw = z.looseObject({
  AppointmentId: opaqueId,
  CompanyId: optId,
  CustomerId: optId,
  EmployeeId: optId,
  ServiceId: optId,
  StartDateTime: optDateTime,
  EndDateTime: optDateTime,
  ModifiedOn: optDateTime,
});

export function mapAppointment(r: z.infer<typeof appointmentRaw>): MappedRow {
  return {
    id: r.AppointmentId,
    sourceModifiedAt: toTimestamp(r.ModifiedOn),
    columns: {
      company_id: orNull(r.CompanyId),
      customer_id: orNull(r.CustomerId),
      employee_id: orNull(r.EmployeeId),
      service_id: orNull(r.ServiceId),
      start_at: toTimestamp(r.StartDateTime),
      end_at: toTimestamp(r.EndDateTime),
    },
  };
}
