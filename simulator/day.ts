// A practice's day as the simulator plays it: which records change when, in
// the practice's time zone, on a clock the caller moves (an accelerated or
// injected one, so a whole day plays in seconds). The changes go through the
// tenant like any other: ModifiedOn is stamped from the clock and webhooks
// fire for the events the API sends.

import { combine, Rng } from './random.ts';
import { TenantClock } from './time.ts';
import type { CoreRecord, CoreResource, TenantHandle } from './types.ts';

const HOUR_MS = 3_600_000;

export interface DayPattern {
  /** Opening hours in the practice's zone: changes happen in [openHour, closeHour). */
  openHour: number;
  closeHour: number;
  /** Relative activity of each opening hour (closeHour - openHour values). */
  shape: number[];
  /** Changes over the day per resource, and how many of them are new records. */
  changes: Partial<Record<CoreResource, { total: number; created: number }>>;
}

/**
 * The reference practice day: open 8-19, busy mornings and late afternoons,
 * about 300 appointment changes, 80 customer, 60 order and 10 membership
 * changes (new records among them: bookings, new patients, sales, sign-ups),
 * next to nothing for products and services, nothing for employees and
 * companies.
 */
export const REFERENCE_DAY: DayPattern = {
  openHour: 8,
  closeHour: 19,
  shape: [1.3, 1.4, 1.3, 1.1, 0.8, 0.9, 1.1, 1.2, 1.0, 0.8, 0.6],
  changes: {
    appointments: { total: 300, created: 40 },
    customers: { total: 80, created: 15 },
    orders: { total: 60, created: 45 },
    memberships: { total: 10, created: 2 },
    products: { total: 1, created: 0 },
    services: { total: 1, created: 0 },
  },
};

/** A day when nothing changes at the source. */
export const QUIET_DAY: DayPattern = { ...REFERENCE_DAY, changes: {} };

/** The reference day's changes in an evening rush, 18:00-21:00, instead of 8-19. */
export const EVENING_DAY: DayPattern = { ...REFERENCE_DAY, openHour: 18, closeHour: 21, shape: [1, 1, 1] };

/** A pattern with every resource's changes (and new records) multiplied by `factor`. */
export function scaledDay(pattern: DayPattern, factor: number): DayPattern {
  const changes: DayPattern['changes'] = {};
  for (const [resource, c] of Object.entries(pattern.changes) as Array<[CoreResource, { total: number; created: number }]>)
    changes[resource] = { total: Math.round(c.total * factor), created: Math.round(c.created * factor) };
  return { ...pattern, changes };
}

/** `total` changes of one resource within the hour starting at `hour` (local), none of them new records. */
export function burstDay(resource: CoreResource, total: number, hour: number): DayPattern {
  return { openHour: hour, closeHour: hour + 1, shape: [1], changes: { [resource]: { total, created: 0 } } };
}

export interface DayChange {
  /** Instant of the change. */
  at: number;
  resource: CoreResource;
  created: boolean;
}

/**
 * The changes of one day starting at local midnight of `date` (YYYY-MM-DD) in
 * `timeZone`, in time order. Each change falls in an opening hour drawn by the
 * pattern's shape, at a uniform instant within it; the same seed gives the
 * same day.
 */
export function planDay(pattern: DayPattern, date: string, timeZone: string, seed = 1): DayChange[] {
  const clock = new TenantClock(timeZone);
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const rng = new Rng(combine(seed, 0xda7));
  const weights = pattern.shape.reduce((a, b) => a + b, 0);
  const out: DayChange[] = [];
  for (const [resource, counts] of Object.entries(pattern.changes) as Array<[CoreResource, { total: number; created: number }]>) {
    for (let i = 0; i < counts.total; i++) {
      let u = rng.next() * weights;
      let hour = 0;
      while (hour < pattern.shape.length - 1 && u > pattern.shape[hour]!) u -= pattern.shape[hour++]!;
      const wall = Date.UTC(y, m - 1, d, pattern.openHour + hour) + Math.floor(rng.next() * HOUR_MS);
      out.push({ at: clock.fromLocal(wall), resource, created: i < counts.created });
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

/** The changes of several patterns played on one day (a usual day and a burst on top of it), in time order. */
export function planLayers(layers: readonly DayPattern[], date: string, timeZone: string, seed = 1): DayChange[] {
  return layers.flatMap((pattern, i) => planDay(pattern, date, timeZone, seed + i * 7919)).sort((a, b) => a.at - b.at);
}

/** One change applied to the tenant: the record as it is now served. */
export function applyChange(tenant: TenantHandle, change: DayChange): CoreRecord {
  if (change.created) return tenant.create(change.resource);
  const [record] = tenant.touch(change.resource, 1);
  if (!record) return tenant.create(change.resource);
  return record;
}
