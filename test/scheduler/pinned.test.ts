/**
 * What pinned streams plan for the rest of the quota day: pure, from cron
 * expressions and a clock.
 */
import { describe, expect, it } from 'vitest';
import { countFires, memoFires, pinnedInput, pinnedSpend } from '../../src/scheduler/pinned.ts';
import type { QuotaSnapshot } from '../../src/state/quota.ts';

const NOW = new Date('2026-03-12T09:45:00Z');
const RESET = new Date('2026-03-13T00:00:00Z');
const pinned = (cron: string, kind: 'incremental' | 'full' = 'incremental', timeZone = 'UTC') => ({
  resource: 'orders',
  kind,
  schedule: { mode: 'cron' as const, cron, timeZone },
});

describe('a pinned stream', () => {
  it('plans its fires from now until the quota day resets, not the fire at the reset itself', () => {
    // 10:00 to 23:45: 14 hours of four fires; 00:00 is the next quota day's.
    expect(pinnedInput(pinned('*/15 * * * *'), 3, NOW, RESET)).toEqual({ resource: 'orders', purpose: 'check', cost: 3, firesLeft: 56 });
    expect(pinnedInput(pinned('0 2 * * *', 'full'), 2, NOW, RESET)).toEqual({ resource: 'orders', purpose: 'full', cost: 2, firesLeft: 0 });
    // Wall-clock hours of its zone: 07:00-19:00 in Berlin (UTC+1 in March) is 06:00-18:00 UTC, from 10:00 on.
    expect(pinnedInput(pinned('0 7-19 * * *', 'incremental', 'Europe/Berlin'), 1, NOW, RESET)!.firesLeft).toBe(9);
  });

  it('plans nothing for a stream scheduled by budget or off', () => {
    expect(pinnedInput({ resource: 'orders', kind: 'incremental', schedule: { mode: 'budget' } }, 1, NOW, RESET)).toBeNull();
    expect(pinnedInput({ resource: 'orders', kind: 'incremental', schedule: { mode: 'off' } }, 1, NOW, RESET)).toBeNull();
  });

  it('counts the same fires when remembered', () => {
    const fires = memoFires();
    const until = new Date(RESET.getTime() - 1);
    expect(fires('*/5 * * * *', 'UTC', NOW, until)).toBe(countFires('*/5 * * * *', 'UTC', NOW, until));
    // 09:50 to 23:55.
    expect(fires('*/5 * * * *', 'UTC', NOW, until)).toBe(170);
    // One remembered count per zone: 10:00-19:00 UTC, and 10:00-18:00 UTC for Berlin's 07:00-19:00.
    expect(fires('0 7-19 * * *', 'UTC', NOW, until)).toBe(10);
    expect(fires('0 7-19 * * *', 'Europe/Berlin', NOW, until)).toBe(9);
  });
});

describe('what the pins of a source spend', () => {
  const quota: QuotaSnapshot = {
    day: '2026-03-12',
    used: 300,
    byPurpose: { check: 40, backfill: 260, webhook: 0, resync: 0, full: 0 },
    dailyLimit: 1000,
    allowance: 900,
    budget: 150,
    budgetUsed: 40,
    exhaustedUntil: null,
    startsAt: new Date('2026-03-12T00:00:00Z'),
    resetsAt: RESET,
  };

  it('adds fires times cost, names the streams that plan requests, the most first, and measures them against the budget left', () => {
    const spend = pinnedSpend(
      [
        { resource: 'companies', purpose: 'full', cost: 4, firesLeft: 0 },
        { resource: 'customers', purpose: 'check', cost: 1, firesLeft: 56 },
        { resource: 'orders', purpose: 'check', cost: 1.5, firesLeft: 56 },
      ],
      quota,
      true,
    );
    expect(spend).toEqual({
      planned: 140,
      resources: ['orders', 'customers'],
      limit: { kind: 'budget', left: 110, perDay: 150 },
      over: 30,
    });
  });

  it('is null without pins', () => {
    expect(pinnedSpend([], quota, true)).toBeNull();
  });
});
