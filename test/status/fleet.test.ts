/**
 * The fleet summary's verdicts and order: pure, from stated facts.
 */
import { describe, expect, it } from 'vitest';
import {
  describeTotals,
  fleetTotals,
  judgeSource,
  shortError,
  sortFleet,
  ERROR_CHARS,
  type Failure,
  type SourceFacts,
  type StreamFacts,
} from '../../src/status/fleet.ts';
import { UNLIMITED } from '../../src/config/schema.ts';
import type { QuotaSnapshot } from '../../src/state/quota.ts';
import { renderStatusPage } from '../../src/serve/status-page.ts';
import type { StatusPageData } from '../../src/status/page.ts';

const NOW = new Date('2026-11-23T10:00:00Z');
const MIN = 60_000;
const ago = (minutes: number) => new Date(NOW.getTime() - minutes * MIN);

function quota(over: Partial<QuotaSnapshot> = {}): QuotaSnapshot {
  return {
    day: '2026-11-23',
    used: 40,
    byPurpose: { check: 20, backfill: 20, webhook: 0, resync: 0, full: 0 },
    dailyLimit: 1000,
    allowance: 900,
    budget: 150,
    budgetUsed: 20,
    exhaustedUntil: null,
    startsAt: new Date('2026-11-23T00:00:00Z'),
    resetsAt: new Date('2026-11-24T00:00:00Z'),
    ...over,
  };
}

function stream(resource: string, over: Partial<StreamFacts> = {}): StreamFacts {
  return {
    resource,
    mode: 'budget',
    targetMinutes: 60,
    lastCheckAt: ago(10),
    firstPass: false,
    backfill: false,
    pagesLeft: null,
    pausedUntil: null,
    ...over,
  };
}

function failure(resource: string, failedInARow = 1, code = 'AUTH_FAILED', minutesAgo = 5): Failure {
  return { resource, failedInARow, code, message: 'refused (401 Unauthorized)', at: ago(minutesAgo).toISOString() };
}

function facts(source: string, over: Partial<SourceFacts> = {}): SourceFacts {
  return { source, kind: 'core', quota: quota(), hasQuota: true, streams: [stream('customers'), stream('orders')], failures: [], ...over };
}

const judge = (f: SourceFacts) => judgeSource(f, NOW);

describe('a source verdict', () => {
  it('is ok when every stream is within its target and nothing failed or ran out', () => {
    const h = judge(facts('a'));
    expect(h).toMatchObject({ verdict: 'ok', reasons: [], budget: { used: 20, budget: 150 }, lastError: null });
    expect(h.stalest).toEqual({ resource: 'customers', minutes: 10, targetMinutes: 60, overdueMinutes: 0 });
  });

  it('is failing when a stream failed its last run, whatever else is wrong, and says which failed longest', () => {
    const h = judge(
      facts('a', {
        quota: quota({ budgetUsed: 150 }),
        failures: [failure('orders', 1, 'SERVER_ERROR', 2), failure('customers', 3)],
        streams: [stream('customers', { lastCheckAt: ago(300) }), stream('orders')],
      }),
    );
    expect(h.verdict).toBe('failing');
    expect(h.reasons).toEqual([
      'customers failed its last 3 runs (AUTH_FAILED)',
      '1 more failing',
      'budget used up: 150 of 150',
      'customers read 5 h ago, target 60 min',
    ]);
    expect(h.lastError).toMatchObject({ resource: 'orders', code: 'SERVER_ERROR' });
  });

  it('is failing while serve has paused the whole source, and not once the pause has passed', () => {
    const paused = judge(facts('a', { sourcePause: { until: new Date(NOW.getTime() + 30 * 60_000), kind: 'auth', failures: 2 } }));
    expect(paused.verdict).toBe('failing');
    expect(paused.reasons[0]).toMatch(/^paused until .* after 2 failures \(auth\)$/);
    const passed = judge(facts('a', { sourcePause: { until: new Date(NOW.getTime() - 60_000), kind: 'server', failures: 1 } }));
    expect(passed).toMatchObject({ verdict: 'ok', reasons: [] });
  });

  it('is over budget when the quota is exhausted or used up, the budget is used up, or a stream is held', () => {
    const exhausted = judge(facts('a', { quota: quota({ exhaustedUntil: new Date('2026-11-24T00:00:00Z') }) }));
    expect(exhausted).toMatchObject({ verdict: 'over budget', reasons: ['quota exhausted (429) until 2026-11-24 00:00 UTC'] });
    expect(judge(facts('a', { quota: quota({ used: 1000 }) })).reasons).toEqual(['quota used up: 1000 of 1000']);
    expect(judge(facts('a', { quota: quota({ budgetUsed: 150 }) })).reasons).toEqual(['budget used up: 150 of 150']);
    const held = judge(facts('a', { streams: [stream('customers', { pausedUntil: new Date('2026-11-24T00:00:00Z') }), stream('orders')] }));
    expect(held).toMatchObject({
      verdict: 'over budget',
      reasons: ['customers held until 2026-11-24 00:00 UTC'],
      pausedUntil: '2026-11-24T00:00:00.000Z',
    });
  });

  it('is not over budget for a budget of 0 or an unlimited one, nor for a hold that has passed', () => {
    expect(judge(facts('a', { quota: quota({ budget: 0, budgetUsed: 0 }) })).verdict).toBe('ok');
    const pro = judge(facts('a', { kind: 'pro', hasQuota: false, quota: quota({ budget: UNLIMITED, dailyLimit: UNLIMITED, used: 5000 }) }));
    expect(pro).toMatchObject({ verdict: 'ok', quota: null, budget: { budget: null } });
    expect(judge(facts('a', { streams: [stream('customers', { pausedUntil: ago(1) })] })).verdict).toBe('ok');
  });

  it('is over budget when its pinned streams plan more than the budget has left, saying what, against what, and what to do', () => {
    // 24 fires of two streams checked in 2 requests each: 96 requests against the 130 the budget has left.
    const pins = (firesLeft: number) => [
      { resource: 'customers', purpose: 'check' as const, cost: 2, firesLeft },
      { resource: 'orders', purpose: 'check' as const, cost: 2, firesLeft },
    ];
    const fits = judge(facts('a', { pinned: pins(24) }));
    expect(fits).toMatchObject({
      verdict: 'ok',
      reasons: [],
      pinned: { planned: 96, resources: ['customers', 'orders'], limit: { kind: 'budget', left: 130, perDay: 150 }, over: 0 },
    });
    const over = judge(facts('a', { pinned: pins(56) }));
    expect(over.verdict).toBe('over budget');
    expect(over.pinned).toMatchObject({ planned: 224, over: 94 });
    expect(over.reasons).toEqual([
      'pinned schedules of customers and orders plan 224 requests for the rest of the quota day, more than the 130 left of the budget of 150 a day: ' +
        'schedule them by budget (remove the cron pins) or raise the budget',
    ]);
    // Exactly what is left still fits.
    expect(judge(facts('a', { pinned: pins(32.5) })).verdict).toBe('ok');
    expect(judge(facts('a')).pinned).toBeNull();
  });

  it('holds pins to the allowance left when resyncs have eaten into it, and a Pro source without a budget to nothing', () => {
    const pins = [{ resource: 'customers', purpose: 'check' as const, cost: 1, firesLeft: 96 }];
    // 900 allowed, 850 used (resyncs): 50 left, less than the budget's 130.
    const h = judge(facts('a', { quota: quota({ used: 850 }), pinned: pins }));
    expect(h.verdict).toBe('over budget');
    expect(h.reasons).toEqual([
      'pinned schedules of customers plan 96 requests for the rest of the quota day, more than the 50 left of the allowance of 900 a day: ' +
        'schedule them by budget (remove the cron pins) or pin them less often',
    ]);
    const pro = judge(
      facts('a', { kind: 'pro', hasQuota: false, quota: quota({ budget: UNLIMITED, dailyLimit: UNLIMITED }), pinned: pins }),
    );
    expect(pro).toMatchObject({ verdict: 'ok', pinned: { planned: 96, limit: null, over: 0 } });
  });

  it('is behind with a first pass or a backfill open, or a stream past its target, saying how far', () => {
    const first = judge(facts('a', { streams: [stream('customers', { firstPass: true, lastCheckAt: null }), stream('orders')] }));
    expect(first).toMatchObject({ verdict: 'behind', reasons: ['first pass open: customers'] });
    expect(first.stalest).toMatchObject({ resource: 'customers', minutes: null });
    const backfill = judge(
      facts('a', {
        streams: [stream('customers', { backfill: true, pagesLeft: 40 }), stream('orders', { backfill: true, pagesLeft: 2 })],
      }),
    );
    expect(backfill).toMatchObject({ verdict: 'behind', reasons: ['backfill open: customers and orders (42 page(s) left)'] });
    const late = judge(
      facts('a', { streams: [stream('customers', { lastCheckAt: ago(100) }), stream('orders', { lastCheckAt: ago(200) })] }),
    );
    expect(late.reasons).toEqual(['orders read 3 h ago, target 60 min', '1 more past target']);
    expect(late.stalest).toEqual({ resource: 'orders', minutes: 200, targetMinutes: 60, overdueMinutes: 140 });
  });

  it('leaves streams that are off out, and holds streams without a target to nothing', () => {
    const h = judge(
      facts('a', {
        streams: [
          stream('customers'),
          stream('products', { mode: 'off', firstPass: true, lastCheckAt: null }),
          stream('orders', { mode: 'cron', targetMinutes: null, lastCheckAt: ago(5000) }),
        ],
      }),
    );
    expect(h.verdict).toBe('ok');
    expect(h.stalest).toMatchObject({ resource: 'orders', minutes: 5000, overdueMinutes: null });
  });
});

describe('the fleet order', () => {
  it('puts failing, then over budget, then behind, then ok, and the worst of each first', () => {
    const list = [
      judge(facts('ok-b')),
      judge(facts('late-10', { streams: [stream('customers', { lastCheckAt: ago(70) })] })),
      judge(facts('budget-half', { quota: quota({ budget: 100, budgetUsed: 100 }) })),
      judge(facts('fail-1', { failures: [failure('customers')] })),
      judge(facts('first-pass', { streams: [stream('customers', { firstPass: true, lastCheckAt: null })] })),
      judge(facts('late-90', { streams: [stream('customers', { lastCheckAt: ago(150) })] })),
      judge(facts('exhausted', { quota: quota({ exhaustedUntil: new Date('2026-11-24T00:00:00Z'), budgetUsed: 150 }) })),
      judge(facts('fail-2', { failures: [failure('customers'), failure('orders')] })),
      judge(facts('ok-a')),
      judge(facts('pins-far-over', { pinned: [{ resource: 'orders', purpose: 'check', cost: 1, firesLeft: 900 }] })),
      judge(facts('pins-over', { pinned: [{ resource: 'orders', purpose: 'check', cost: 1, firesLeft: 200 }] })),
      judge(facts('backfill', { streams: [stream('customers', { backfill: true, pagesLeft: 7 })] })),
    ];
    expect(sortFleet(list).map((h) => h.source)).toEqual([
      'fail-2',
      'fail-1',
      'exhausted',
      'budget-half',
      'pins-far-over',
      'pins-over',
      'first-pass',
      'backfill',
      'late-90',
      'late-10',
      'ok-a',
      'ok-b',
    ]);
    const totals = fleetTotals(list);
    expect(totals).toEqual({ sources: 12, failing: 2, overBudget: 4, behind: 4, ok: 2 });
    expect(describeTotals(totals)).toBe('12 sources: 2 failing, 4 over budget, 4 behind, 2 ok');
  });

  it('cuts an error to its first line and ERROR_CHARS', () => {
    expect(shortError('refused\nbody: {"x": 1}')).toBe('refused');
    const long = shortError('x'.repeat(500));
    expect(long).toHaveLength(ERROR_CHARS);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('the status page summary', () => {
  const data = (over: Partial<StatusPageData> = {}): StatusPageData => {
    const sources = [judge(facts('<b>x</b>', { failures: [failure('customers', 2, '<i>CODE</i>')] })), judge(facts('ok-a'))];
    return {
      generatedAt: NOW,
      fleet: { at: NOW.toISOString(), totals: fleetTotals(sources), sources: sortFleet(sources), omitted: 0 },
      attention: { quarantined: 0, drift: [] },
      sources: [],
      unknownSource: null,
      linkedDetail: true,
      webhooks: null,
      ...over,
    };
  };

  it('escapes what it shows, links each source to its detail, and never prints an error message', () => {
    const html = renderStatusPage(data());
    expect(html).toContain('<a href="?source=%3Cb%3Ex%3C%2Fb%3E#source--b-x--b-">&lt;b&gt;x&lt;/b&gt;</a>');
    expect(html).toContain('customers failed its last 2 runs (&lt;i&gt;CODE&lt;/i&gt;)');
    expect(html).not.toContain('<b>x');
    expect(html).not.toContain('<i>CODE');
    expect(html).not.toContain('401 Unauthorized');
    expect(html).toContain('2 sources: 1 failing, 0 over budget, 0 behind, 1 ok');
    expect(html).toContain('Choose a source in the summary to see its detail.');
  });
});
