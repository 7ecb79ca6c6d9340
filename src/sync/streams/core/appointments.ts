import { appointmentRaw, mapAppointment } from '../../../mappers/core/appointments.ts';
import { dateInZone } from '../../../time.ts';
import { defineRestStream } from '../rest.ts';

const DAY_MS = 86_400_000;

/**
 * Appointments. The list requires StartDate and EndDate: each window covers the
 * configured history start up to a forward horizon, fixed when the window opens
 * so every page of the window asks the same question.
 */
export default defineRestStream({
  resource: 'appointments',
  path: '/appointments',
  idField: 'AppointmentId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  raw: appointmentRaw,
  map: mapAppointment,
  fields: {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    employee_id: 'EmployeeId',
    service_id: 'ServiceId',
    start_at: 'StartDateTime',
    end_at: 'EndDateTime',
  },
  windowFilters: (source, runStart) => ({
    StartDate: source.appointments.historyStart,
    EndDate: dateInZone(new Date(runStart.getTime() + source.appointments.horizonDays * DAY_MS), source.timeZone),
  }),
  recordPath: (id) => `/appointments/${encodeURIComponent(id)}/details`,
  table: {
    name: 'appointments',
    idType: 'text',
    columns: {
      company_id: 'text',
      customer_id: 'text',
      employee_id: 'text',
      service_id: 'text',
      start_at: 'timestamp',
      end_at: 'timestamp',
    },
  },
});
