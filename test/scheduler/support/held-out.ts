/**
 * The rig of the held-out days' tests (test/scheduler/held-out*.int.test.ts):
 * a practice that learned 28 ordinary days, then plays a day unlike them on
 * the injected clock against the real simulator, PostgreSQL, run queue and
 * webhook receiver. Two files, so that the suite runs them side by side.
 */
import { afterEach } from 'vitest';
import { SMALL_SIZES } from '../../../bench/support/baselines.ts';
import { DayRig, type RigOptions } from '../../../bench/support/day-rig.ts';
import { REFERENCE_DAY, type DayPattern } from '../../../simulator/day.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { scaled } from '../../support/time-scale.ts';

// Hours of simulated time, each tick a real scheduling decision on PostgreSQL. The tests check what happened, never how long it took.
export const DAY_TIMEOUT = { timeout: scaled(600_000) };
export const DATE = '2026-11-19';
export const ZONE = 'America/New_York';
/** The practice the scheduler's day tests play: its records by resource (day.int, decide-on-change.int and held-out*.int). */
export const PRACTICE_SIZES = SMALL_SIZES;
/** The reference day's appointment rush, at 18:00-21:00 instead of 8:00-19:00. */
export const EVENING: DayPattern = {
  openHour: 18,
  closeHour: 21,
  shape: [1, 1, 1],
  changes: { appointments: { total: 150, created: 10 } },
};

/** Starts a rig for each test of the calling file (closed and its database dropped after each). */
export function heldOutRigs(): (options: Partial<RigOptions>) => Promise<DayRig> {
  let db: TestDatabase | null = null;
  let rig: DayRig | null = null;
  afterEach(async () => {
    await rig?.close();
    await db?.drop();
    rig = null;
    db = null;
  });
  return async (options) => {
    db = await createTestDatabase({ migrate: false });
    rig = await DayRig.start({
      databaseUrl: db.url,
      date: DATE,
      timeZone: ZONE,
      sizes: PRACTICE_SIZES,
      historyDays: 28,
      historyPattern: REFERENCE_DAY,
      tickSeconds: 60,
      webhooks: false,
      ...options,
    });
    await rig.prepare();
    return rig;
  };
}

/** The windows a stream's checks completed in [from, to) (pmsync's clock), and the rows each changed. */
export async function windows(r: DayRig, resource: string, from: number, to: number): Promise<Array<{ end: number; found: number }>> {
  const res = await r.app.pool.query<{ window_end: Date; n: number }>(
    `SELECT window_end, inserted + updated AS n FROM pmsync.runs
     WHERE source = 'clinic' AND resource = $1 AND status = 'succeeded' AND window_end >= $2 AND window_end < $3 ORDER BY window_end`,
    [resource, new Date(from), new Date(to)],
  );
  return res.rows.map((x) => ({ end: x.window_end.getTime(), found: x.n }));
}
