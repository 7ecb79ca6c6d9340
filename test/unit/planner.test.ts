import { describe, expect, it } from 'vitest';
import { initialPaging, type PagingState } from '../../src/api/pager.ts';
import type { WindowCheckpoint } from '../../src/state/checkpoints.ts';
import { orderPlans, planStream } from '../../src/sync/planner.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { estimateWindow } from '../../src/status/detail.ts';

const stream = (resource: string) => REST_STREAMS.find((s) => s.resource === resource)!;

function window(paging: PagingState): WindowCheckpoint {
  return {
    mode: 'incremental',
    start: null,
    end: '2026-03-02T09:59:00.000Z',
    nextPage: paging.nextPage,
    filters: {},
    startedAt: '2026-03-02T10:00:00.000Z',
    totalRows: null,
    paging,
  };
}
const backward = (nextPage: number, totalPages: number): PagingState => ({
  ...initialPaging(),
  order: 'backward',
  nextPage,
  totalPages,
  rowsPerPage: 100,
  lastTotal: totalPages * 100,
  pagesRead: totalPages - nextPage + 1,
});

describe('planner', () => {
  it('checks caught-up streams (incremental or full refresh) before backfills, whatever the catalog order', () => {
    const plans = [
      planStream(stream('customers'), { cursor: null, window: window(backward(400, 1000)) }),
      planStream(stream('orders'), { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
      planStream(stream('giftcertificates'), { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
      planStream(stream('employees'), { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
    ];
    expect(plans.map((p) => p.phase)).toEqual(['backfill', 'check', 'check', 'check']);
    expect(orderPlans(plans).map((p) => p.stream.resource)).toEqual(['orders', 'giftcertificates', 'employees', 'customers']);
  });

  it('checks the stalest first, so a budget too small for every check reaches each in turn', () => {
    const at = (iso: string) => ({ cursor: new Date(iso), window: null });
    const plans = [
      planStream(stream('customers'), at('2026-03-03T02:00:00Z')),
      planStream(stream('orders'), at('2026-03-01T02:00:00Z')),
      planStream(stream('giftcertificates'), at('2026-03-02T02:00:00Z')),
      planStream(stream('employees'), at('2026-03-01T02:00:00Z')),
    ];
    expect(orderPlans(plans).map((p) => p.stream.resource)).toEqual(['orders', 'employees', 'giftcertificates', 'customers']);
  });

  it('orders backfills by pages left: not started (0) first, unknown sizes last', () => {
    const plans = [
      planStream(stream('customers'), { cursor: null, window: window(backward(300, 1000)) }),
      planStream(stream('appointments'), { cursor: null, window: window(backward(20, 50)) }),
      planStream(stream('orders'), { cursor: null, window: null }),
      planStream(stream('memberships'), { cursor: null, window: window({ ...initialPaging(3), order: 'forward' }) }),
    ];
    expect(plans.map((p) => p.pagesLeft)).toEqual([299, 19, 0, null]);
    expect(orderPlans(plans).map((p) => p.stream.resource)).toEqual(['orders', 'appointments', 'customers', 'memberships']);
  });

  it('reads a window left unfinished as a backfill even with a cursor', () => {
    const p = planStream(stream('customers'), { cursor: new Date(), window: window(backward(3, 10)) });
    expect(p.phase).toBe('backfill');
  });
});

describe('estimated quota days of a window', () => {
  it('counts today while it has allowance left, then whole days of the sync allowance', () => {
    expect(estimateWindow(1000, 100, 900, 900, 900)).toMatchObject({ pagesLeft: 900, quotaDays: 1 });
    expect(estimateWindow(1000, 100, 900, 900, 500)).toMatchObject({ quotaDays: 2 });
    expect(estimateWindow(1000, 100, 900, 900, 0)).toMatchObject({ quotaDays: 1 });
    expect(estimateWindow(5000, 0, 5000, 900, 0)).toMatchObject({ quotaDays: 6 });
    expect(estimateWindow(10, 10, 0, 900, 0)).toMatchObject({ quotaDays: 0 });
  });
});
