import { describe, expect, it } from 'vitest';
import { initialPaging, type PagingState } from '../../src/api/pager.ts';
import type { WindowCheckpoint } from '../../src/state/checkpoints.ts';
import { orderPlans, planStream } from '../../src/sync/planner.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { estimateWindow } from '../../src/cli/commands/status.ts';

const stream = (resource: string) => REST_STREAMS.find((s) => s.resource === resource)!;
const source = { fullRefresh: [] as string[] };

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
  it('runs caught-up incremental streams before backfills, whatever the catalog order', () => {
    const plans = [
      planStream(stream('customers'), source, { cursor: null, window: window(backward(400, 1000)) }),
      planStream(stream('orders'), source, { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
      planStream(stream('giftcertificates'), source, { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
      planStream(stream('employees'), source, { cursor: new Date('2026-03-01T00:00:00Z'), window: null }),
    ];
    expect(plans.map((p) => p.phase)).toEqual(['backfill', 'incremental', 'backfill', 'incremental']);
    expect(orderPlans(plans).map((s) => s.resource)).toEqual(['orders', 'employees', 'giftcertificates', 'customers']);
  });

  it('orders backfills by pages left: not started (0) first, unknown sizes last', () => {
    const plans = [
      planStream(stream('customers'), source, { cursor: null, window: window(backward(300, 1000)) }),
      planStream(stream('appointments'), source, { cursor: null, window: window(backward(20, 50)) }),
      planStream(stream('orders'), source, { cursor: null, window: null }),
      planStream(stream('memberships'), source, { cursor: null, window: window({ ...initialPaging(3), order: 'forward' }) }),
    ];
    expect(plans.map((p) => p.pagesLeft)).toEqual([299, 19, 0, null]);
    expect(orderPlans(plans).map((s) => s.resource)).toEqual(['orders', 'appointments', 'customers', 'memberships']);
  });

  it('treats a stream switched to full refresh as a backfill even with a cursor', () => {
    const p = planStream(stream('customers'), { fullRefresh: ['customers'] }, { cursor: new Date(), window: null });
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
