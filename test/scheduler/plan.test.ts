import { describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config.ts';
import { missedFire, overrideFor, planSchedules, timerGroups, type StreamEntry } from '../../src/scheduler/plan.ts';
import { schedulesSchema } from '../../src/scheduler/settings.ts';

const source = (name: string, timeZone = 'UTC') => ({ kind: 'core', name, timeZone }) as unknown as SourceConfig;
const catalog = (): StreamEntry[] => [
  { resource: 'companies', mode: 'full' },
  { resource: 'customers', mode: 'incremental' },
  { resource: 'orders', mode: 'incremental' },
];

describe('planSchedules', () => {
  it('gives incremental streams the 15-minute default and full ones the nightly default in the source zone', () => {
    const plan = planSchedules(schedulesSchema.parse({}), [source('a', 'Europe/Berlin')], catalog);
    expect(plan.problems).toEqual([]);
    expect(plan.schedules.map((s) => [s.key, s.cron, s.timeZone])).toEqual([
      ['a/companies', '0 2 * * *', 'Europe/Berlin'],
      ['a/customers', '*/15 * * * *', 'Europe/Berlin'],
      ['a/orders', '*/15 * * * *', 'Europe/Berlin'],
    ]);
  });

  it('applies the most specific override and leaves "off" streams unscheduled', () => {
    const settings = schedulesSchema.parse({
      incremental: '*/10 * * * *',
      overrides: [
        { resource: 'orders', cron: '@hourly' },
        { source: 'b', resource: 'orders', cron: '5 * * * *', timeZone: 'America/Chicago' },
        { source: 'b', cron: 'off' },
      ],
    });
    const plan = planSchedules(settings, [source('a'), source('b')], catalog);
    expect(plan.problems).toEqual([]);
    expect(plan.schedules.map((s) => `${s.key} ${s.cron} ${s.timeZone}`)).toEqual([
      'a/companies 0 2 * * * UTC',
      'a/customers */10 * * * * UTC',
      'a/orders 0 * * * * UTC',
      'b/orders 5 * * * * America/Chicago',
    ]);
    expect(plan.off).toEqual(['b/companies', 'b/customers']);
  });

  it('reports overrides naming unknown sources or resources', () => {
    const settings = schedulesSchema.parse({
      overrides: [
        { source: 'nope', cron: 'off' },
        { resource: 'widgets', cron: 'off' },
        { source: 'a', resource: 'invoices', cron: 'off' },
      ],
    });
    const plan = planSchedules(settings, [source('a')], catalog);
    expect(plan.problems).toEqual([
      'schedules.overrides[0]: no source named "nope" (known: a)',
      'schedules.overrides[1]: no configured source has a resource "widgets"',
      'schedules.overrides[2]: source "a" has no resource "invoices"',
    ]);
  });

  it('rejects invalid cron expressions when the settings are parsed', () => {
    const parsed = schedulesSchema.safeParse({ full: '0 25 * * *', overrides: [{ resource: 'x', cron: 'sometimes' }] });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.message).join('\n')).toMatch(/hour 25 is outside 0-23[\s\S]*"sometimes"/);
  });
});

describe('overrideFor', () => {
  it('prefers source+resource over resource over source, and the last of equals', () => {
    const overrides = [
      { source: 'a', cron: '1 * * * *' },
      { resource: 'orders', cron: '2 * * * *' },
      { source: 'a', resource: 'orders', cron: '3 * * * *' },
      { resource: 'orders', cron: '4 * * * *' },
    ];
    expect(overrideFor(overrides, 'a', 'orders')?.cron).toBe('3 * * * *');
    expect(overrideFor(overrides, 'b', 'orders')?.cron).toBe('4 * * * *');
    expect(overrideFor(overrides, 'a', 'customers')?.cron).toBe('1 * * * *');
    expect(overrideFor(overrides, 'b', 'customers')).toBeUndefined();
  });
});

describe('timerGroups', () => {
  it("groups one source's schedules that fire together, in stream order", () => {
    const plan = planSchedules(schedulesSchema.parse({}), [source('a'), source('b')], catalog);
    const groups = timerGroups([...plan.schedules].reverse());
    expect(groups.map((g) => `${g.source} ${g.cron}: ${g.schedules.map((s) => s.resource).join(',')}`).sort()).toEqual([
      'a */15 * * * *: customers,orders',
      'a 0 2 * * *: companies',
      'b */15 * * * *: customers,orders',
      'b 0 2 * * *: companies',
    ]);
  });
});

describe('missedFire', () => {
  const t = (iso: string) => new Date(iso);
  it('is true when the most recent fire is later than the last claimed one, or none was ever claimed', () => {
    expect(missedFire(t('2026-11-21T02:00:00Z'), t('2026-11-22T02:00:00Z'))).toBe(true);
    expect(missedFire(null, t('2026-11-22T02:00:00Z'))).toBe(true);
    expect(missedFire(t('2026-11-22T02:00:00Z'), t('2026-11-22T02:00:00Z'))).toBe(false);
    expect(missedFire(null, null)).toBe(false);
  });
});
