/**
 * The policies the held-out days are played with (bench/days.ts): the budget
 * scheduler, and three baselines a team would configure instead, each through
 * the real scheduler with pinned crons (schedules.overrides):
 * (a) "hours-cron": busy streams every N minutes in opening hours, the rest nightly;
 * (b) "cron": every stream on one plain cron every N minutes;
 * (c) "cron+webhooks": every stream nightly, and a notified stream checked N
 *     minutes after its first waiting notification (bench/support/webhook-trigger.ts).
 */
import { firesBetween } from '../../src/cron.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import type { DayChange } from '../../simulator/day.ts';
import type { CoreResource } from '../../simulator/index.ts';
import { MINUTE, type RigOptions } from './day-rig.ts';
import { BUSY, ZONE } from './held-out.ts';

/** A practice of a few thousand patients (the held-out days and bench/schedule.ts). */
export const SIZES: Partial<Record<CoreResource, number>> = {
  companies: 3,
  customers: 5_000,
  appointments: 20_000,
  orders: 12_000,
  memberships: 800,
  membershipprograms: 8,
  giftcertificates: 320,
  products: 60,
  services: 25,
  employees: 15,
};

/**
 * A practice whose first pass finds a few hundred records of each busy stream (the scheduler's integration tests,
 * test/scheduler/support/held-out.ts): against a day of the reference pattern, its memory holds next to nothing.
 */
export const SMALL_SIZES: Partial<Record<CoreResource, number>> = {
  customers: 400,
  appointments: 900,
  orders: 500,
  memberships: 80,
  giftcertificates: 40,
  products: 20,
  services: 10,
  employees: 8,
};

const PAGE = 100;
export const NIGHTLY = '0 2 * * *';
/** Opening hours a baseline's admin configures (the reference day's: 8-19, last change before 19:00). */
const OPEN_FROM = 8;
const OPEN_TO = 19;
const CORE_STREAMS = REST_STREAMS.filter((s) => s.variants.includes('core'));
export const INCREMENTAL = CORE_STREAMS.filter((s) => s.mode !== 'full').map((s) => s.resource);
export const FULL_STREAMS = CORE_STREAMS.filter((s) => s.mode === 'full').map((s) => s.resource);

export type Policy =
  /** `hours`: the practice's opening hours stated to pmsync (a source's `hours`), as the opening-hours cron is told them. */
  | { kind: 'budget'; budget: number; webhooks: boolean; hours?: readonly string[] }
  /** (a) busy streams every N minutes in opening hours, the rest nightly. */
  | { kind: 'hours-cron'; every: number }
  /** (b) every stream on one plain cron every N minutes. */
  | { kind: 'cron'; every: number }
  /** (c) every stream nightly, and a notified stream checked N minutes after its first waiting notification. */
  | { kind: 'cron+webhooks'; every: number };
export type Baseline = Exclude<Policy, { kind: 'budget' }>['kind'];

/** Settings of N tried per baseline, from the tightest. */
export const CANDIDATES: Record<Baseline, number[]> = {
  'hours-cron': [5, 10, 15, 20, 30, 60, 120, 180, 240],
  cron: [5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 720],
  'cron+webhooks': [1, 2, 3, 5, 10, 15, 20, 30, 60, 120],
};

export function hoursCron(every: number): string {
  if (every < 60) return `*/${every} ${OPEN_FROM}-${OPEN_TO} * * *`;
  // Whole hours counted back from closing, so the last check of the day comes at closing time.
  const hours: number[] = [];
  for (let h = OPEN_TO; h >= OPEN_FROM; h -= every / 60) hours.unshift(h);
  return `0 ${hours.join(',')} * * *`;
}
export const plainCron = (every: number) => (every < 60 ? `*/${every} * * * *` : `0 */${every / 60} * * *`);

export function cronOf(p: Exclude<Policy, { kind: 'budget' }>, resource: string): string {
  if (p.kind === 'cron') return plainCron(p.every);
  if (p.kind === 'hours-cron' && (BUSY as readonly string[]).includes(resource)) return hoursCron(p.every);
  return NIGHTLY;
}

export function policyName(p: Policy): string {
  switch (p.kind) {
    case 'budget':
      return `budget ${p.budget}${p.webhooks ? ' + webhooks' : ', no webhooks'}${p.hours ? `, hours stated (${p.hours.join('; ')})` : ''}`;
    case 'hours-cron':
      return `(a) busy \`${hoursCron(p.every)}\`, rest nightly`;
    case 'cron':
      return `(b) every stream \`${plainCron(p.every)}\``;
    case 'cron+webhooks':
      return `(c) nightly + check ${p.every} min after a notification`;
  }
}

export function rigOptions(p: Policy): Partial<RigOptions> {
  if (p.kind === 'budget') return { budget: p.budget, webhooks: p.webhooks, ...(p.hours ? { source: { hours: p.hours } } : {}) };
  // The whole allowance as budget, so the schedule decides, not the budget.
  return {
    budget: 900,
    webhooks: false,
    schedules: {
      incremental: NIGHTLY,
      full: NIGHTLY,
      overrides: INCREMENTAL.map((resource) => ({ resource, cron: cronOf(p, resource) })),
    },
  };
}

/**
 * Requests a baseline is expected to spend on the day: one page per check
 * and one more per 100 changes it reads, plus the nightly full refreshes. An
 * estimate to pick the setting to play; the played count is the simulator's.
 */
export function predict(
  p: Exclude<Policy, { kind: 'budget' }>,
  changes: readonly DayChange[],
  from: number,
  to: number,
  tickMs: number,
): number {
  let total = 0;
  for (const resource of FULL_STREAMS) {
    const fires = firesBetween(NIGHTLY, ZONE, new Date(from - 1), new Date(to - 1)).length;
    total += fires * Math.max(1, Math.ceil((SIZES[resource as CoreResource] ?? 1) / PAGE));
  }
  for (const resource of INCREMENTAL) {
    const times = changes.filter((c) => c.resource === resource).map((c) => c.at);
    const checks = firesBetween(cronOf(p, resource), ZONE, new Date(from - 1), new Date(to - 1), 10_000).map((d) => d.getTime());
    if (p.kind === 'cron+webhooks' && (BUSY as readonly string[]).includes(resource)) {
      let waiting: number | null = null;
      let i = 0;
      for (let t = from; t < to; t += tickMs) {
        for (; i < times.length && times[i]! <= t; i++) waiting ??= times[i]!;
        if (waiting !== null && t - waiting >= p.every * MINUTE) {
          checks.push(t);
          waiting = null;
        }
      }
      checks.sort((a, b) => a - b);
    }
    let prev = from;
    for (const at of checks) {
      const read = times.filter((t) => t > prev && t <= at).length;
      total += Math.max(1, Math.ceil(read / PAGE));
      prev = at;
    }
  }
  return total;
}
