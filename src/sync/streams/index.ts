/**
 * Every stream pmsync knows, by API kind. Adding a resource is adding one file
 * under streams/<kind>/ and one line here.
 */
import type { SourceConfig } from '../../config.ts';
import { ConfigError } from '../../errors.ts';
import type { RestStream } from './rest.ts';
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
  const available = restStreamsFor(source);
  const configured = source.streams ? available.filter((s) => source.streams!.includes(s.resource)) : available;
  if (!resources || resources.length === 0) return configured;
  const unknown = resources.filter((r) => !available.some((s) => s.resource === r));
  if (unknown.length > 0) {
    throw new ConfigError([
      `source "${source.name}" (${source.kind}) has no resource ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${available.map((s) => s.resource).join(', ')}`,
    ]);
  }
  return available.filter((s) => resources.includes(s.resource));
}
