/**
 * The benchmark's "cron plus webhook-triggered checks" baseline
 * (bench/support/webhook-trigger.ts) on the injected clock, against the real
 * simulator, PostgreSQL and run queue: a burst of notifications costs one
 * check, queued once its first notification is old enough, and the requests
 * are the simulator's own count.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rigOptions } from '../../bench/support/baselines.ts';
import { DayRig, MINUTE } from '../../bench/support/day-rig.ts';
import { WebhookTrigger } from '../../bench/support/webhook-trigger.ts';
import type { DayChange } from '../../simulator/day.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const SIZES = {
  customers: 200,
  appointments: 300,
  orders: 200,
  memberships: 20,
  giftcertificates: 10,
  products: 10,
  services: 5,
  employees: 4,
};

let db: TestDatabase | null = null;
let rig: DayRig | null = null;
let trigger: WebhookTrigger | null = null;
afterEach(async () => {
  await trigger?.close();
  await rig?.close();
  await db?.drop();
  trigger = null;
  rig = null;
  db = null;
});

describe('the cron plus webhook-triggered checks baseline', () => {
  it(
    'checks a notified stream once, delayMinutes after its first notification, and reads the whole burst',
    { timeout: 300_000 },
    async () => {
      db = await createTestDatabase({ migrate: false });
      rig = await DayRig.start({
        databaseUrl: db.url,
        date: '2027-11-18',
        timeZone: 'America/New_York',
        sizes: SIZES,
        tickSeconds: 60,
        ...rigOptions({ kind: 'cron+webhooks', every: 5 }),
        // pmsync's own receiver stays off: the trigger is the only one notified.
        webhooks: false,
      });
      await rig.prepare();
      trigger = await WebhookTrigger.start(rig, 5);
      rig.extraRuns = trigger.runs;
      const from = rig.dayStart;
      // Five appointment changes from 00:05:30, a minute apart; nothing pinned fires before 02:00.
      const changes: DayChange[] = Array.from({ length: 5 }, (_, i) => ({
        at: from + 5.5 * MINUTE + i * MINUTE,
        resource: 'appointments',
        created: false,
      }));
      const played = await rig.play(changes, from, from + 30 * MINUTE);

      expect(trigger.notifications).toBe(5);
      expect(trigger.checks).toBe(1);
      expect(played.changes.every((c) => c.visibleAt !== null)).toBe(true);
      // The oldest waited for the delay and the next tick: 00:05:30 to 00:11.
      expect(Math.max(...played.changes.map((c) => (c.visibleAt! - c.at) / MINUTE))).toBe(5.5);
      const day = rig.requestsOn(from, from + 30 * MINUTE);
      expect(day.requestsByStream).toEqual({ appointments: 1 });
    },
  );
});
