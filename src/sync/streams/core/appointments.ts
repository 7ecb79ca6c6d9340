import { id, timestamp } from '../../columns.ts';
import { dateInZone } from '../../../time.ts';
import { defineRestStream } from '../rest.ts';

const DAY_MS = 86_400_000;

/**
 * Appointments. The list requires StartDate and EndDate: each window covers the
 * configured history start up to a forward horizon, fixed when the window opens
 * so every page of the window asks the same question. The spec names no
 * appointment fields: these columns are read when present, and the whole
 * record stays in raw.
 */
export default defineRestStream({
  resource: 'appointments',
  path: '/appointments',
  idField: 'AppointmentId',
  mode: 'incremental',
  variants: ['core', 'subset'],
  windowFilters: (source, runStart) => ({
    StartDate: source.appointments.historyStart,
    EndDate: dateInZone(new Date(runStart.getTime() + source.appointments.horizonDays * DAY_MS), source.timeZone),
  }),
  webhook: { events: ['Appointment.Created', 'Appointment.Updated'], recordUrl: 'appointments/{id}/details' },
  table: {
    name: 'appointments',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) the appointment is at: companies.id.' }),
      customer_id: id('CustomerId', { doc: 'The customer booked: customers.id.' }),
      employee_id: id('EmployeeId', { doc: 'The employee who serves it: employees.id.' }),
      service_id: id('ServiceId', { doc: 'The service booked: services.id.' }),
      start_at: timestamp('StartDateTime', { doc: "When the appointment starts, in the source's wall-clock time." }),
      end_at: timestamp('EndDateTime', { doc: "When the appointment ends, in the source's wall-clock time." }),
    },
    indexes: [
      ['source', 'customer_id'],
      ['source', 'company_id', 'start_at'],
    ],
  },
});
