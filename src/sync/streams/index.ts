/**
 * Every stream pmsync knows, by API kind. Adding a resource is adding one file
 * under streams/<kind>/ and one line here.
 */
import type { ProSourceConfig, SourceConfig } from '../../config/schema.ts';
import { ConfigError, PmsyncError } from '../../errors.ts';
import { validNames } from '../../strict-schema.ts';
import type { RestStream } from './rest.ts';
import type { ProStream } from './pro/stream.ts';
import proEventTypes from './pro/event-types.ts';
import proPatients from './pro/patients.ts';
import proAppointments from './pro/appointments.ts';
import proWaitlistSlots from './pro/waitlist-slots.ts';
import proWaitlist from './pro/waitlist.ts';
import proAvailability from './pro/availability.ts';
import companies from './core/companies.ts';
import customers from './core/customers.ts';
import appointments from './core/appointments.ts';
import orders from './core/orders.ts';
import memberships from './core/memberships.ts';
import membershipPrograms from './core/membership-programs.ts';
import giftCertificates from './core/gift-certificates.ts';
import products from './core/products.ts';
import services from './core/services.ts';
import employees from './core/employees.ts';

/** Core and Subset streams, in the order a run reads them (small catalogs first). */
export const REST_STREAMS: RestStream[] = [
  companies,
  membershipPrograms,
  customers,
  appointments,
  orders,
  memberships,
  giftCertificates,
  products,
  services,
  employees,
];

export function restStreamsFor(source: SourceConfig): RestStream[] {
  if (source.kind === 'pro') return [];
  return REST_STREAMS.filter((s) => s.variants.includes(source.kind as 'core' | 'subset'));
}

/** The streams a run reads: the source's configured list or all of its kind, optionally narrowed. */
export function selectRestStreams(source: SourceConfig, resources?: string[]): RestStream[] {
  return select(source, restStreamsFor(source), resources);
}

/**
 * Pro streams, in the order a run reads them: appointments fan out over the
 * stored patients and waitlist entries over the stored waitlist slots, so
 * those lists come first. Patients lead: the longest list, its first page
 * settles the server's page size for every list after it (src/sync/pro-pager.ts).
 */
export const PRO_STREAMS: ProStream[] = [proPatients, proEventTypes, proAppointments, proWaitlistSlots, proWaitlist, proAvailability];

export function selectProStreams(source: ProSourceConfig, resources?: string[]): ProStream[] {
  return select(source, PRO_STREAMS, resources);
}

/** The resources an API kind serves, for checking the names a configuration uses. */
export function resourceNames(kind: SourceConfig['kind']): string[] {
  if (kind === 'pro') return PRO_STREAMS.map((s) => s.resource);
  return REST_STREAMS.filter((s) => s.variants.includes(kind)).map((s) => s.resource);
}

/** Every table a stream writes, whatever the source (each has a `<table>_history` beside it). */
export function allResourceTables(): string[] {
  return [...new Set([...REST_STREAMS, ...PRO_STREAMS].map((s) => s.table.name))];
}

/** Every resource of a source with the table it lands in (for status). */
export function resourceTablesFor(source: SourceConfig): Array<{ resource: string; table: { name: string } }> {
  return source.kind === 'pro' ? PRO_STREAMS : restStreamsFor(source);
}

/**
 * The resource a name means for a source: the name itself, or the resource
 * whose table it names (`gift_certificates` is `giftcertificates`,
 * `pro_patients` is a Pro source's `patients`). Other names come back unchanged.
 */
export function resourceNamed(source: SourceConfig, name: string): string {
  const entries = resourceTablesFor(source);
  return entries.find((s) => s.resource === name)?.resource ?? entries.find((s) => s.table.name === name)?.resource ?? name;
}

/** The table a name means for a source: the name itself, or the table of the resource it names; undefined for neither. */
export function tableNamed(source: SourceConfig, name: string): string | undefined {
  const entries = resourceTablesFor(source);
  return entries.find((s) => s.table.name === name)?.table.name ?? entries.find((s) => s.resource === name)?.table.name;
}

/** The resource writing a table of any kind (for commands without a source, like `runs --resource`); the name when none does. */
export function resourceOfTable(name: string): string {
  return [...REST_STREAMS, ...PRO_STREAMS].find((s) => s.table.name === name && s.resource !== name)?.resource ?? name;
}

function select<S extends { resource: string }>(source: SourceConfig, available: S[], named?: string[]): S[] {
  const resources = named?.map((n) => resourceNamed(source, n));
  const unknownIn = (names: string[]) => names.filter((r) => !available.some((s) => s.resource === r));
  const names = available.map((s) => s.resource);
  const known = `known: ${names.join(', ')}`;
  const badConfigured = unknownIn(source.streams ?? []);
  if (badConfigured.length > 0) {
    throw new ConfigError([
      `source "${source.name}" (${source.kind}): "streams" names ${badConfigured.map((u) => `"${u}"`).join(', ')}, which the ${source.kind} API does not serve; ${known}`,
    ]);
  }
  const configured = source.streams ? available.filter((s) => source.streams!.includes(s.resource)) : available;
  if (!resources || resources.length === 0) return configured;
  const unknown = unknownResources(source, resources);
  if (unknown.length > 0) throw new PmsyncError('USAGE', unknown.join('\n'));
  return available.filter((s) => resources.includes(s.resource));
}

/** Names given with `--resource` that the source's API kind does not serve: usage errors, each with the valid names. */
export function unknownResources(source: SourceConfig, resources: readonly string[]): string[] {
  const names = resourceTablesFor(source).map((s) => s.resource);
  return resources
    .filter((r) => !names.includes(resourceNamed(source, r)))
    .map((r) => `--resource ${r}: source "${source.name}" (${source.kind}) has no resource "${r}"${validNames(r, names, 'resources')}`);
}
