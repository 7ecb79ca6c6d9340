/**
 * The notifications a stream received today, read against PostgreSQL: how
 * many since its quota day began, and where the latest run of them since its
 * local midnight (none more than RUN_GAP_HOURS apart) began, which says when a
 * new practice's working day began.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifiedOf, RUN_GAP_HOURS } from '../../src/state/stream-schedule.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const DAY_START = new Date('2026-11-19T05:00:00Z');
const at = (hours: number) => new Date(DAY_START.getTime() + hours * 3_600_000);
let events = 0;

async function notify(source: string, resource: string, hours: number, outcome = 'notified'): Promise<void> {
  const when = at(hours);
  await db.pool.query(
    `INSERT INTO pmsync.webhook_events (source, event_id, event_type, tenant_id, application, event_timestamp, url, resource, outcome, received_at, last_received_at)
     VALUES ($1, $2, 'Appointment.Updated', 't', 'a', $3, 'u', $4, $5, $3, $3)`,
    [source, `e${++events}`, when, resource, outcome],
  );
}

describe("today's run of notifications", () => {
  it("starts after the last gap of more than RUN_GAP_HOURS, and counts that run's minutes with notifications", async () => {
    // Yesterday evening, a booking at 02:00, then the practice's day from 08:00.
    await notify('a', 'appointments', -3);
    await notify('a', 'appointments', 2);
    for (const h of [8, 8.2, 8.5, 9, 11.5]) await notify('a', 'appointments', h);
    // Quiet for less than the gap: one run from 06:00.
    for (const h of [6, 6 + RUN_GAP_HOURS - 0.5, 9]) await notify('a', 'orders', h);
    // A stray booking only, and an event that did not notify.
    await notify('a', 'customers', 1);
    await notify('a', 'customers', 8, 'rejected');
    // A batch within a minute (a bulk edit) is one minute of the run.
    for (const s of [0, 5, 20, 59]) await notify('a', 'products', 9 + s / 3600);

    const read = await notifiedOf(db.pool, [{ source: 'a', dayStart: DAY_START, localDayStart: DAY_START }], at(-24), at(12));
    const a = read.get('a')!;
    expect(a.get('appointments')).toMatchObject({ today: 6, runStart: at(8), runCount: 5, latestReceived: at(11.5) });
    expect(a.get('orders')).toMatchObject({ today: 3, runStart: at(6), runCount: 3 });
    expect(a.get('customers')).toMatchObject({ today: 1, runStart: at(1), runCount: 1 });
    expect(a.get('products')).toMatchObject({ today: 4, runStart: at(9), runCount: 1 });
  });

  it('reads only what was received by the instant asked, each source from its own day', async () => {
    await notify('b', 'appointments', 7);
    await notify('b', 'appointments', 7.5);
    await notify('b', 'appointments', 20);
    const read = await notifiedOf(db.pool, [{ source: 'b', dayStart: DAY_START, localDayStart: DAY_START }], at(-24), at(10));
    expect(read.get('b')!.get('appointments')).toMatchObject({ today: 2, runStart: at(7), runCount: 2 });
    // From a day that began at 07:30 (another source's zone), the run is the one notification after it.
    const later = await notifiedOf(db.pool, [{ source: 'b', dayStart: at(7.5), localDayStart: at(7.5) }], at(-24), at(10));
    expect(later.get('b')!.get('appointments')).toMatchObject({ today: 1, runStart: at(7.5), runCount: 1 });
  });

  it("counts today from the quota day's start and the run from the practice's midnight, within the lookback", async () => {
    // The quota day turns at 19:00 local (midnight UTC, for a practice in New York): a run in the evening before.
    for (const h of [-4.5, -4, -3.9]) await notify('d', 'appointments', h);
    // Its morning: three hours apart exactly is one run.
    for (const h of [7, 10, 10.5]) await notify('d', 'appointments', h);
    await notify('e', 'appointments', 9);
    await notify('e', 'appointments', 9.5);
    await notify('e', 'appointments', 9.75);
    const read = await notifiedOf(
      db.pool,
      [
        { source: 'd', dayStart: at(-5), localDayStart: DAY_START },
        { source: 'e', dayStart: DAY_START, localDayStart: DAY_START },
      ],
      at(-24),
      at(12),
    );
    expect(read.get('d')!.get('appointments')).toMatchObject({ today: 6, runStart: at(7), runCount: 3 });
    expect(read.get('e')!.get('appointments')).toMatchObject({ today: 3, runStart: at(9), runCount: 3 });
    // Nothing before the lookback counts, in the run or anywhere.
    const late = await notifiedOf(db.pool, [{ source: 'd', dayStart: at(-5), localDayStart: DAY_START }], at(9), at(12));
    expect(late.get('d')!.get('appointments')).toMatchObject({ today: 2, runStart: at(10), runCount: 2 });
  });

  it('has no run when nothing came today', async () => {
    await notify('c', 'appointments', -5);
    const read = await notifiedOf(db.pool, [{ source: 'c', dayStart: DAY_START, localDayStart: DAY_START }], at(-24), at(10));
    expect(read.get('c')!.get('appointments')).toMatchObject({ today: 0, runStart: null, runCount: 0 });
  });
});
