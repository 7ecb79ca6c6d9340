import {
  AREA_CODES,
  COMPANY_NAMES,
  EMAIL_DOMAINS,
  FIRST_NAMES,
  LAST_NAMES,
  LOCATIONS,
  PRODUCT_NAMES,
  PROGRAM_NAMES,
  SERVICE_NAMES,
} from '../names.ts';
import type { Rng } from '../random.ts';
import type { TenantClock } from '../time.ts';
import { dayToDate, utcWall } from '../time.ts';
import type { CoreResource } from '../types.ts';

// One declaration per Core resource: its id member, paging default, which
// filters apply, and how a record's fields derive from (tenant seed, index).
// Fields are a pure function of the index so records need no storage until a
// test or a mutation overrides them.

const DAY_MS = 86_400_000;

/** What a generator may read while building record `index`. */
export interface Gen {
  readonly rng: Rng;
  readonly index: number;
  readonly createdMs: number;
  /** UTC day number of the data anchor (the day the simulator started). */
  readonly anchorDay: number;
  readonly clock: TenantClock;
  /** Brand shared by all companies of the tenant. */
  readonly brand: string;
  /** A seeded record index of `resource` drawn from rng, or -1 when there are none. */
  pick(resource: CoreResource): number;
  id(resource: CoreResource, index: number): string;
}

export type RecordEvent = 'Patient' | 'Appointment' | 'Order';

export interface ResourceDef {
  readonly name: CoreResource;
  /** Tag inside the opaque id, so an id of one resource never resolves in another. */
  readonly kind: number;
  readonly idField: string;
  readonly defaultRows: number;
  readonly defaultSize: number;
  readonly hasCompany: boolean;
  readonly hasIsActive: boolean;
  /** Webhook family and record path (relative to the API base) for resources that emit events. */
  readonly event?: { name: RecordEvent; path: (id: string) => string };
  generate(g: Gen): Record<string, unknown>;
}

function ref(g: Gen, resource: CoreResource): string | null {
  const index = g.pick(resource);
  return index < 0 ? null : g.id(resource, index);
}

function money(value: number): number {
  return Math.round(value * 100) / 100;
}

function numbered(names: readonly string[], index: number): string {
  const base = names[index % names.length] ?? 'Item';
  const round = Math.floor(index / names.length);
  return round === 0 ? base : `${base} ${round + 1}`;
}

export function programName(index: number): string {
  return numbered(PROGRAM_NAMES, index);
}

function person(g: Gen): { first: string; last: string } {
  return { first: g.rng.pick(FIRST_NAMES), last: g.rng.pick(LAST_NAMES) };
}

const emailParts = new Map<string, string>();

/** The ASCII letters of a name for an address: accents dropped (Zoë: zoe); "guest" when none are left (美咲). */
function emailPart(name: string): string {
  let part = emailParts.get(name);
  if (part === undefined) {
    part =
      name
        .normalize('NFKD')
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, '') || 'guest';
    emailParts.set(name, part);
  }
  return part;
}

function emailOf(first: string, last: string, suffix: string, domain: string): string {
  return `${emailPart(first)}.${emailPart(last)}${suffix}@${domain}`;
}

function phone(g: Gen): string {
  return `(${g.rng.pick(AREA_CODES)}) 555-${String(g.rng.int(10_000)).padStart(4, '0')}`;
}

function brandDomain(brand: string): string {
  return `${brand
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z]/g, '')}.example.com`;
}

export function pickBrand(rng: Rng): string {
  return rng.pick(COMPANY_NAMES);
}

const companies: ResourceDef = {
  name: 'companies',
  kind: 1,
  idField: 'CompanyId',
  defaultRows: 20,
  defaultSize: 3,
  hasCompany: false,
  hasIsActive: true,
  generate: (g) => ({
    CompanyName: `${g.brand} - ${numbered(LOCATIONS, g.index)}`,
    IsActive: g.index === 0 || g.rng.chance(0.9),
  }),
};

const customers: ResourceDef = {
  name: 'customers',
  kind: 2,
  idField: 'CustomerId',
  defaultRows: 20,
  defaultSize: 250,
  hasCompany: true,
  hasIsActive: true,
  event: { name: 'Patient', path: (id) => `customers/${id}` },
  generate: (g) => {
    const { first, last } = person(g);
    const companyId = ref(g, 'companies');
    const birthday = g.rng.chance(0.85) ? dayToDate(g.rng.between(-10_950, 13_500)) : null;
    const lastVisit = g.rng.chance(0.7) ? dayToDate(g.anchorDay - g.rng.between(1, 730)) : null;
    return {
      CompanyId: companyId,
      FirstName: first,
      LastName: last,
      Email: emailOf(first, last, String(g.index), g.rng.pick(EMAIL_DOMAINS)),
      MobilePhone: phone(g),
      IsActive: g.rng.chance(0.9),
      Birthday: birthday,
      LastVisit: lastVisit,
    };
  },
};

const appointments: ResourceDef = {
  name: 'appointments',
  kind: 3,
  idField: 'AppointmentId',
  defaultRows: 30,
  defaultSize: 500,
  hasCompany: true,
  hasIsActive: false,
  event: { name: 'Appointment', path: (id) => `appointments/${id}/details` },
  generate: (g) => {
    // Appointments are booked in the practice's own wall time, so the strings
    // are built directly as local times.
    const day = g.anchorDay + g.rng.between(-365, 90);
    const startWall = day * DAY_MS + g.rng.between(32, 68) * 15 * 60_000;
    const minutes = g.rng.pick([30, 45, 60, 90]);
    return {
      CompanyId: ref(g, 'companies'),
      CustomerId: ref(g, 'customers'),
      EmployeeId: ref(g, 'employees'),
      ServiceId: ref(g, 'services'),
      StartDateTime: utcWall(startWall),
      EndDateTime: utcWall(startWall + minutes * 60_000),
    };
  },
};

const orders: ResourceDef = {
  name: 'orders',
  kind: 4,
  idField: 'OrderId',
  defaultRows: 30,
  defaultSize: 300,
  hasCompany: true,
  hasIsActive: false,
  event: { name: 'Order', path: (id) => `orders/${id}` },
  generate: (g) => ({
    CompanyId: ref(g, 'companies'),
    CustomerId: ref(g, 'customers'),
    OrderDate: g.clock.wall(g.createdMs),
    Total: money(g.rng.between(20, 2000) + g.rng.int(100) / 100),
  }),
};

const memberships: ResourceDef = {
  name: 'memberships',
  kind: 5,
  idField: 'MembershipId',
  defaultRows: 30,
  defaultSize: 60,
  hasCompany: true,
  hasIsActive: false,
  generate: (g) => {
    const program = g.pick('membershipprograms');
    const soldOn = g.clock.date(g.createdMs);
    const soldDay = Math.floor(Date.parse(soldOn) / DAY_MS);
    const billedYet = g.anchorDay - soldDay > 30;
    const lastBillDay = billedYet ? g.anchorDay - g.rng.between(0, 29) : null;
    return {
      CompanyId: ref(g, 'companies'),
      CustomerId: ref(g, 'customers'),
      MembershipProgram: program < 0 ? null : programName(program),
      BillAmount: g.rng.pick([49, 79, 99, 149, 199, 249]),
      NextBillDate: dayToDate((lastBillDay ?? soldDay) + 30),
      LastBillDate: lastBillDay === null ? null : dayToDate(lastBillDay),
      SoldOn: soldOn,
    };
  },
};

const membershipPrograms: ResourceDef = {
  name: 'membershipprograms',
  kind: 6,
  idField: 'MembershipProgramId',
  defaultRows: 20,
  defaultSize: 5,
  hasCompany: true,
  hasIsActive: false,
  generate: (g) => ({
    CompanyId: ref(g, 'companies'),
    ProgramName: programName(g.index),
    Description: `Monthly plan with member pricing on ${g.rng.pick(SERVICE_NAMES).toLowerCase()} and products.`,
  }),
};

const giftCertificates: ResourceDef = {
  name: 'giftcertificates',
  kind: 7,
  idField: 'GiftCertificateId',
  defaultRows: 30,
  defaultSize: 45,
  hasCompany: true,
  hasIsActive: false,
  generate: (g) => {
    const amount = g.rng.pick([25, 50, 75, 100, 150, 200, 250, 500]);
    return {
      CompanyId: ref(g, 'companies'),
      CustomerId: ref(g, 'customers'),
      Amount: amount,
      Balance: g.rng.chance(0.4) ? amount : money(amount * g.rng.next()),
      IssuedOn: g.clock.date(g.createdMs),
    };
  },
};

const products: ResourceDef = {
  name: 'products',
  kind: 8,
  idField: 'ProductId',
  defaultRows: 20,
  defaultSize: 25,
  hasCompany: true,
  hasIsActive: true,
  generate: (g) => ({
    CompanyId: ref(g, 'companies'),
    Name: numbered(PRODUCT_NAMES, g.index),
    Price: money(g.rng.between(12, 180) + 0.99),
    IsActive: g.rng.chance(0.85),
  }),
};

const services: ResourceDef = {
  name: 'services',
  kind: 9,
  idField: 'ServiceId',
  defaultRows: 20,
  defaultSize: 12,
  hasCompany: true,
  hasIsActive: true,
  generate: (g) => ({
    CompanyId: ref(g, 'companies'),
    Name: numbered(SERVICE_NAMES, g.index),
    Price: g.rng.between(3, 60) * 25,
    DurationMinutes: g.rng.pick([15, 30, 45, 60, 90]),
    IsActive: g.rng.chance(0.9),
  }),
};

const employees: ResourceDef = {
  name: 'employees',
  kind: 10,
  idField: 'EmployeeId',
  defaultRows: 20,
  defaultSize: 10,
  hasCompany: true,
  hasIsActive: true,
  generate: (g) => {
    const { first, last } = person(g);
    return {
      CompanyId: ref(g, 'companies'),
      FirstName: first,
      LastName: last,
      Email: emailOf(first, last, '', brandDomain(g.brand)),
      IsActive: g.rng.chance(0.9),
    };
  },
};

export const RESOURCE_DEFS: Readonly<Record<CoreResource, ResourceDef>> = {
  companies,
  customers,
  appointments,
  orders,
  memberships,
  membershipprograms: membershipPrograms,
  giftcertificates: giftCertificates,
  products,
  services,
  employees,
};
