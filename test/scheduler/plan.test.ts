import { describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/schema.ts';
import { overrideFor, planStreams, type StreamEntry } from '../../src/scheduler/plan.ts';
import { schedulesSchema } from '../../src/config/schedules.ts';

const source = (name: string, timeZone = 'UTC') => ({ kind: 'core', name, timeZone }) as unknown as SourceConfig;
const catalog = (): StreamEntry[] => [
  { resource: 'companies', kind: 'full' },
  { resource: 'customers', kind: 'incremental' },
  { resource: 'orders', kind: 'incremental' },
];

describe('planStreams', () => {
  it('schedules every stream by budget by default, with no freshness target', () => {
    const plan = planStreams(schedulesSchema.parse({}), [source('a', 'Europe/Berlin')], catalog);
    expect(plan.problems).toEqual([]);
    expect(plan.streams.map((s) => [s.key, s.kind, s.schedule.mode, s.maxStalenessMinutes])).toEqual([
      ['a/companies', 'full', 'budget', null],
      ['a/customers', 'incremental', 'budget', null],
      ['a/orders', 'incremental', 'budget', null],
    ]);
  });

  it('pins streams to cron expressions, turns some off, and sets freshness targets, the most specific override winning', () => {
    const settings = schedulesSchema.parse({
      full: '0 2 * * *',
      maxStalenessMinutes: 120,
      overrides: [
        { resource: 'orders', cron: '@hourly' },
        { source: 'b', resource: 'orders', cron: '5 * * * *', timeZone: 'America/Chicago' },
        { source: 'b', cron: 'off' },
        { source: 'b', resource: 'customers', cron: 'budget', maxStalenessMinutes: 15 },
      ],
    });
    const plan = planStreams(settings, [source('a', 'Europe/Berlin'), source('b')], catalog);
    expect(plan.problems).toEqual([]);
    const shown = plan.streams.map(
      (s) =>
        `${s.key} ${s.schedule.mode === 'cron' ? `${s.schedule.cron} ${s.schedule.timeZone}` : s.schedule.mode} ${s.maxStalenessMinutes}`,
    );
    expect(shown).toEqual([
      'a/companies 0 2 * * * Europe/Berlin 120',
      'a/customers budget 120',
      'a/orders 0 * * * * Europe/Berlin 120',
      'b/companies off 120',
      'b/customers budget 15',
      'b/orders 5 * * * * America/Chicago 120',
    ]);
  });

  it('reports overrides naming unknown sources or resources', () => {
    const settings = schedulesSchema.parse({
      overrides: [
        { source: 'nope', cron: 'off' },
        { resource: 'widgets', cron: 'off' },
        { source: 'a', resource: 'invoices', cron: 'off' },
      ],
    });
    expect(planStreams(settings, [source('a')], catalog).problems).toEqual([
      'schedules.overrides[0]: no source named "nope" (known: a)',
      'schedules.overrides[1]: no configured source has a resource "widgets"',
      'schedules.overrides[2]: source "a" has no resource "invoices"',
    ]);
  });

  it('refuses invalid schedules when the settings are parsed, and overrides that set nothing', () => {
    const parsed = schedulesSchema.safeParse({
      full: '0 25 * * *',
      budget: 'lots',
      overrides: [{ resource: 'x', cron: 'sometimes' }, { resource: 'y' }],
    });
    expect(parsed.success).toBe(false);
    const messages = parsed.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
    expect(messages).toMatch(/full: "0 25 \* \* \*" is not a valid cron expression: .*25 expected range 0-23 \(or "budget", or "off"\)/);
    expect(messages).toMatch(/budget: .*percentage of dailyQuota/);
    expect(messages).toMatch(/overrides.0.cron: "sometimes" is not a valid cron expression/);
    expect(messages).toMatch(/overrides.1: an override sets "cron", "maxStalenessMinutes" or both/);
  });
});

describe('overrideFor', () => {
  it('prefers source+resource over resource over source, and the last of equals, among overrides setting the field', () => {
    const overrides = [
      { source: 'a', cron: '1 * * * *' },
      { resource: 'orders', cron: '2 * * * *' },
      { source: 'a', resource: 'orders', cron: '3 * * * *' },
      { resource: 'orders', cron: '4 * * * *' },
      { source: 'a', resource: 'orders', maxStalenessMinutes: 30 },
    ];
    expect(overrideFor(overrides, 'a', 'orders', 'cron')?.cron).toBe('3 * * * *');
    expect(overrideFor(overrides, 'b', 'orders', 'cron')?.cron).toBe('4 * * * *');
    expect(overrideFor(overrides, 'a', 'customers', 'cron')?.cron).toBe('1 * * * *');
    expect(overrideFor(overrides, 'b', 'customers', 'cron')).toBeUndefined();
    expect(overrideFor(overrides, 'a', 'orders', 'maxStalenessMinutes')?.maxStalenessMinutes).toBe(30);
  });
});
