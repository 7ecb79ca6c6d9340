/**
 * The streams' column declarations (src/sync/columns.ts) replace the hand-written
 * mappers of src/mappers/: for every recorded fixture, and for broken copies of
 * them, both validate the same way and map to the same row.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { describeIssues } from '../../src/mappers/common.ts';
import * as coreAppointments from '../../src/mappers/core/appointments.ts';
import * as coreCompanies from '../../src/mappers/core/companies.ts';
import * as coreCustomers from '../../src/mappers/core/customers.ts';
import * as coreEmployees from '../../src/mappers/core/employees.ts';
import * as coreGift from '../../src/mappers/core/gift-certificates.ts';
import * as corePrograms from '../../src/mappers/core/membership-programs.ts';
import * as coreMemberships from '../../src/mappers/core/memberships.ts';
import * as coreOrders from '../../src/mappers/core/orders.ts';
import * as coreProducts from '../../src/mappers/core/products.ts';
import * as coreServices from '../../src/mappers/core/services.ts';
import * as proAppointments from '../../src/mappers/pro/appointments.ts';
import * as proEventTypes from '../../src/mappers/pro/event-types.ts';
import * as proPatients from '../../src/mappers/pro/patients.ts';
import * as proWaitlist from '../../src/mappers/pro/waitlist-entries.ts';
import * as proSlots from '../../src/mappers/pro/waitlist-slots.ts';
import { PRO_STREAMS, REST_STREAMS } from '../../src/sync/streams/index.ts';
import type { MappedRow, StreamBase } from '../../src/sync/types.ts';

type Old = { raw: z.ZodType<Record<string, unknown>>; map: (r: never) => MappedRow; fields: Record<string, string> };
const old = (raw: unknown, map: unknown, fields: Record<string, string>) => ({ raw, map, fields }) as Old;

const CORE: Record<string, Old> = {
  companies: old(coreCompanies.companyRaw, coreCompanies.mapCompany, { company_name: 'CompanyName', is_active: 'IsActive' }),
  customers: old(coreCustomers.customerRaw, coreCustomers.mapCustomer, {
    company_id: 'CompanyId',
    first_name: 'FirstName',
    last_name: 'LastName',
    email: 'Email',
    mobile_phone: 'MobilePhone',
    is_active: 'IsActive',
    birthday: 'Birthday',
    last_visit: 'LastVisit',
  }),
  appointments: old(coreAppointments.appointmentRaw, coreAppointments.mapAppointment, {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    employee_id: 'EmployeeId',
    service_id: 'ServiceId',
    start_at: 'StartDateTime',
    end_at: 'EndDateTime',
  }),
  orders: old(coreOrders.orderRaw, coreOrders.mapOrder, {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    order_date: 'OrderDate',
    total: 'Total',
  }),
  memberships: old(coreMemberships.membershipRaw, coreMemberships.mapMembership, {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    membership_program: 'MembershipProgram',
    bill_amount: 'BillAmount',
    next_bill_date: 'NextBillDate',
    last_bill_date: 'LastBillDate',
    sold_on: 'SoldOn',
  }),
  membershipprograms: old(corePrograms.membershipProgramRaw, corePrograms.mapMembershipProgram, {
    company_id: 'CompanyId',
    program_name: 'ProgramName',
    description: 'Description',
  }),
  giftcertificates: old(coreGift.giftCertificateRaw, coreGift.mapGiftCertificate, {
    company_id: 'CompanyId',
    customer_id: 'CustomerId',
    amount: 'Amount',
    balance: 'Balance',
    issued_on: 'IssuedOn',
  }),
  products: old(coreProducts.productRaw, coreProducts.mapProduct, {
    company_id: 'CompanyId',
    name: 'Name',
    price: 'Price',
    is_active: 'IsActive',
  }),
  services: old(coreServices.serviceRaw, coreServices.mapService, {
    company_id: 'CompanyId',
    name: 'Name',
    price: 'Price',
    duration_minutes: 'DurationMinutes',
    is_active: 'IsActive',
  }),
  employees: old(coreEmployees.employeeRaw, coreEmployees.mapEmployee, {
    company_id: 'CompanyId',
    first_name: 'FirstName',
    last_name: 'LastName',
    email: 'Email',
    is_active: 'IsActive',
  }),
};

const PRO: Record<string, Old> = {
  patients: old(proPatients.patientRaw, proPatients.mapPatient, {
    first_name: 'firstName',
    last_name: 'lastName',
    dob: 'dob',
    cell_phone: 'cellPhone',
  }),
  'event-types': old(proEventTypes.eventTypeRaw, proEventTypes.mapEventType, { name: 'name' }),
  appointments: old(proAppointments.proAppointmentRaw, proAppointments.mapProAppointment, {
    event_type_id: 'eventTypeId',
    provider_id: 'providerId',
    appt_date: 'apptDate',
  }),
  'waitlist-slots': old(proSlots.waitlistSlotRaw, proSlots.mapWaitlistSlot, {
    waitlist_id: 'waitlistId',
    provider_id: 'providerId',
    event_type_id: 'eventTypeId',
    slot_date: 'slotDate',
    status: 'status',
  }),
  waitlist: old(proWaitlist.waitlistEntryRaw, proWaitlist.mapWaitlistEntry, {
    date_from: 'dateFrom',
    date_to: 'dateTo',
    provider_ids: 'providerIds',
    days_of_week: 'daysOfWeek',
    times_of_day: 'timesOfDay',
    comments: 'comments',
  }),
};

const load = (kind: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/${kind}/records.json`, import.meta.url), 'utf8')) as Record<
    string,
    Array<Record<string, unknown>>
  >;

/** A fixture, and copies of it with one raw field at a time given a value of the wrong type, or removed. */
function variants(record: Record<string, unknown>, fields: string[]): unknown[] {
  const out: unknown[] = [record];
  for (const f of fields) {
    for (const bad of ['not-a-date', 12.5, true, null, { x: 1 }, [1], -3, '2026-02-30']) out.push({ ...record, [f]: bad });
    const { [f]: _gone, ...rest } = record;
    out.push(rest);
  }
  return out;
}

function outcome(schema: z.ZodType<Record<string, unknown>>, map: (r: never) => MappedRow, raw: unknown) {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return { rejected: describeIssues(parsed.error) };
  return { parsed: parsed.data, row: map(parsed.data as never) };
}

function compare(kind: string, streams: StreamBase[], olds: Record<string, Old>) {
  const fixtures = load(kind);
  for (const stream of streams) {
    it(`${kind} ${stream.resource}: same validation, same row and same fields as the old mapper`, () => {
      const before = olds[stream.resource]!;
      expect(stream.fields).toEqual(before.fields);
      const shape = (before.raw as unknown as { shape: Record<string, unknown> }).shape;
      expect(Object.keys((stream.raw as unknown as { shape: Record<string, unknown> }).shape).sort()).toEqual(Object.keys(shape).sort());
      for (const record of fixtures[stream.resource]!) {
        for (const raw of variants(record, Object.keys(shape))) {
          const a = outcome(before.raw, before.map, raw);
          const b = outcome(stream.raw, stream.map as (r: never) => MappedRow, raw);
          expect(b).toStrictEqual(a);
          if (a.row) expect(JSON.stringify(b.row)).toBe(JSON.stringify(a.row));
        }
      }
    });
  }
}

describe('column declarations against the old mappers', () => {
  compare('core', REST_STREAMS, CORE);
  compare('pro', PRO_STREAMS.filter((s) => s.kind !== 'pro-snapshot') as StreamBase[], PRO);
});
