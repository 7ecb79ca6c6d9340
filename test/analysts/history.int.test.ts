/**
 * History mode as an analyst meets it: a source lists tables in `history`,
 * syncs run as usual, and the month-end question ("memberships active on a
 * date, as pmsync knew them then") is answered from <table>_as_of() with the
 * query docs/analysts.md gives, while tables not listed keep no history.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProSourceConfig, RestSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { runStream } from '../../src/sync/run-stream.ts';
import { PRO_STREAMS, REST_STREAMS } from '../../src/sync/streams/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, loadTestConfig, openTestApp, type TestApp } from '../support/harness.ts';

const TENANT = { apikey: 'hist-key-Pq3', username: 'hist.user', password: 'hist-pass-Lm8', variant: 'core' as const };
const PRACTICE = {
  token: 'hist-pro-token-Wd2',
  practiceId: 64,
  appointmentFields: 'spec' as const,
  sizes: { patients: 20, appointmentsPerPatient: 2, eventTypes: 2, providers: 2, waitlist: 0, waitlistSlots: 0 },
};

let sim: Simulator;
let db: TestDatabase;
let app: TestApp;
let core: RestSourceConfig;
let pro: ProSourceConfig;

const rest = (resource: string) => REST_STREAMS.find((s) => s.resource === resource)!;
const proStream = (resource: string) => PRO_STREAMS.find((s) => s.resource === resource)!;
const tenant = () => sim.tenant(TENANT.apikey);

/** The month-end query of docs/analysts.md, for any instant and day. */
async function activeOn(day: string, at: string): Promise<number> {
  const res = await db.pool.query<{ active: number }>(
    `SELECT count(*)::int AS active FROM memberships_as_of($2::timestamptz) WHERE source = 'clinic' AND next_bill_date >= $1::date`,
    [day, at],
  );
  return res.rows[0]!.active;
}

const servedActive = (day: string) =>
  tenant()
    .list('memberships')
    .filter((m) => typeof m.NextBillDate === 'string' && m.NextBillDate >= day).length;

async function clock(): Promise<string> {
  return (await db.pool.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now;
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 21,
    tenants: [{ ...TENANT, sizes: { memberships: 80, customers: 40, membershipprograms: 4 } }],
    practices: [PRACTICE],
  });
  db = await createTestDatabase();
  const config = loadTestConfig(db.url, [
    coreEntry(sim, 'clinic', TENANT, { lagSeconds: 0, history: ['memberships'] }),
    {
      kind: 'pro',
      name: 'practice',
      baseUrl: sim.proBaseUrl(),
      practiceId: PRACTICE.practiceId,
      token: PRACTICE.token,
      history: ['pro_appointments'],
    },
  ]);
  [core, pro] = config.sources as [RestSourceConfig, ProSourceConfig];
  app = await openTestApp(config);
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

describe('history mode through the runners', () => {
  it('answers "memberships active on a day" as pmsync knew them then and now', async () => {
    const day = new Date().toISOString().slice(0, 10);
    await runStream(app.ctx, core, rest('memberships'));
    await runStream(app.ctx, core, rest('customers'));
    const activeBefore = servedActive(day);
    expect(activeBefore).toBeGreaterThan(2);
    const monthEnd = await clock();

    const [cancelled, removed] = tenant()
      .list('memberships')
      .filter((m) => typeof m.NextBillDate === 'string' && m.NextBillDate >= day);
    tenant().update('memberships', String(cancelled!.MembershipId), { NextBillDate: null });
    tenant().remove('memberships', String(removed!.MembershipId));
    await runStream(app.ctx, core, rest('memberships'), { full: true });
    const later = await clock();

    expect(await activeOn(day, monthEnd)).toBe(activeBefore);
    expect(await activeOn(day, later)).toBe(activeBefore - 2);
    expect(servedActive(day)).toBe(activeBefore - 2);

    const cancelledVersions = await db.pool.query(
      "SELECT next_bill_date IS NULL AS cancelled, is_current FROM memberships_history WHERE source = 'clinic' AND id = $1 ORDER BY valid_from",
      [cancelled!.MembershipId],
    );
    expect(cancelledVersions.rows).toEqual([
      { cancelled: false, is_current: false },
      { cancelled: true, is_current: true },
    ]);
    const removedVersions = await db.pool.query("SELECT is_current FROM memberships_history WHERE source = 'clinic' AND id = $1", [
      removed!.MembershipId,
    ]);
    expect(removedVersions.rows).toEqual([{ is_current: false }]);
  });

  it('runs every query of the history section of docs/analysts.md', async () => {
    const doc = readFileSync(new URL('../../docs/analysts.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## History: as of a date'), doc.indexOf('\n## ', doc.indexOf('## History: as of a date') + 3));
    const statements = [...section.matchAll(/```sql\n([\s\S]*?)```/g)]
      .flatMap((m) => m[1]!.split(/;\s*\n/))
      .map((q) => q.trim())
      .filter((q) => /\bSELECT\b/i.test(q));
    expect(statements.length).toBeGreaterThanOrEqual(5);
    for (const text of statements) await db.pool.query(text);
    const ends = await db.pool.query(statements[1]!);
    expect(ends.rows).toHaveLength(12);
  });

  it('keeps no history for tables the source does not list', async () => {
    const customers = await db.pool.query('SELECT count(*)::int AS n FROM customers_history');
    expect(customers.rows[0].n).toBe(0);
    const kept = await db.pool.query('SELECT source, table_name FROM pmsync.history_tables ORDER BY 1');
    expect(kept.rows).toEqual([{ source: 'clinic', table_name: 'memberships' }]);
  });

  it('keeps Pro appointment versions and closes the one a sweep no longer finds', async () => {
    await runStream(app.ctx, pro, proStream('patients'));
    await runStream(app.ctx, pro, proStream('appointments'));
    const [gone] = sim.practice(PRACTICE.practiceId).list('appointments');
    sim.practice(PRACTICE.practiceId).remove('appointments', gone!.appointmentId);
    await runStream(app.ctx, pro, proStream('appointments'), { full: true });
    const versions = await db.pool.query<{ current: number; closed: number; with_patient: number }>(
      `SELECT count(*) FILTER (WHERE is_current)::int AS current, count(*) FILTER (WHERE NOT is_current)::int AS closed,
              count(*) FILTER (WHERE patient_id IS NOT NULL)::int AS with_patient
       FROM pro_appointments_history WHERE source = 'practice'`,
    );
    expect(versions.rows[0]).toEqual({ current: 39, closed: 1, with_patient: 40 });
    const closed = await db.pool.query("SELECT id FROM pro_appointments_history WHERE source = 'practice' AND NOT is_current");
    expect(closed.rows.map((r) => Number(r.id))).toEqual([gone!.appointmentId]);
  });
});
