/**
 * What a source's pinned (cron) streams will spend for the rest of its quota
 * day, and whether that fits what its budget, or its allowance, has left.
 * A pinned stream fires whatever the plan says, and its checks count in the
 * budget: pins that plan more than is left use the budget up early, after
 * which every stream of the source waits for the reset. Pure; the
 * scheduler's plan, the fleet summary (status, the status page) and the
 * metrics all count pins here.
 */
import type { PinnedInput } from './budget.ts';
import { firesBetween } from '../cron.ts';
import type { ScheduledStream } from './plan.ts';
import { UNLIMITED } from '../config/schema.ts';
import type { QuotaSnapshot } from '../state/quota.ts';

export type CronFires = (cron: string, timeZone: string, after: Date, until: Date) => number;

/** Fires in (after, until]. */
export const countFires: CronFires = (cron, timeZone, after, until) => firesBetween(cron, timeZone, after, until).length;

/** countFires remembered: a fleet's sources mostly share their pins, zones and resets. */
export function memoFires(): CronFires {
  const seen = new Map<string, number>();
  return (cron, timeZone, after, until) => {
    const key = `${cron}|${timeZone}|${after.getTime()}|${until.getTime()}`;
    let n = seen.get(key);
    if (n === undefined) seen.set(key, (n = countFires(cron, timeZone, after, until)));
    return n;
  };
}

/**
 * A pinned stream's fires left before the quota day resets (a fire at the
 * reset itself spends the next day's quota), and their cost; null for a
 * stream that is not pinned.
 */
export function pinnedInput(
  stream: Pick<ScheduledStream, 'resource' | 'kind' | 'schedule'>,
  cost: number,
  now: Date,
  resetsAt: Date,
  fires: CronFires = countFires,
): PinnedInput | null {
  if (stream.schedule.mode !== 'cron') return null;
  return {
    resource: stream.resource,
    purpose: stream.kind === 'full' ? 'full' : 'check',
    cost,
    firesLeft: fires(stream.schedule.cron, stream.schedule.timeZone, now, new Date(resetsAt.getTime() - 1)),
  };
}

export interface PinnedSpend {
  /** Requests the pinned streams plan for the rest of the quota day. */
  planned: number;
  /** The pinned streams that plan requests, the most first. */
  resources: string[];
  /**
   * What they must fit: what is left of the budget, or of the allowance when
   * that is less (resyncs spend it too); null when neither is bounded.
   */
  limit: { kind: 'budget' | 'allowance'; left: number; perDay: number } | null;
  /** Requests planned beyond the limit (0: they fit). */
  over: number;
}

/** Null when no stream of the source is pinned. */
export function pinnedSpend(pinned: PinnedInput[], quota: QuotaSnapshot, hasQuota: boolean): PinnedSpend | null {
  if (pinned.length === 0) return null;
  const planned = Math.round(pinned.reduce((n, p) => n + p.firesLeft * p.cost, 0));
  const limits: NonNullable<PinnedSpend['limit']>[] = [];
  if (quota.budget < UNLIMITED) limits.push({ kind: 'budget', left: Math.max(0, quota.budget - quota.budgetUsed), perDay: quota.budget });
  if (hasQuota) limits.push({ kind: 'allowance', left: Math.max(0, quota.allowance - quota.used), perDay: quota.allowance });
  const limit = limits.reduce<PinnedSpend['limit']>((m, l) => (!m || l.left < m.left ? l : m), null);
  return {
    planned,
    resources: pinned
      .filter((p) => p.firesLeft > 0)
      .sort((a, b) => b.firesLeft * b.cost - a.firesLeft * a.cost)
      .map((p) => p.resource),
    limit,
    over: limit ? Math.max(0, planned - limit.left) : 0,
  };
}
