/**
 * Pro appointments against a server that answers GET /patients/{id}/appointments
 * with only the fields the spec shows (appointmentId, apptDate): every row
 * carries the patient it was listed under, appointments that disappear are
 * marked not seen, and rows stored without their patient (by earlier
 * versions) are repaired by the next pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type ProSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { runStream } from '../../src/sync/run-stream.ts';
import { PRO_STREAMS } from '../../src/sync/streams/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { writeConfig } from '../support/cli.ts';

const PRACTICE = {
  token: 'int-pro-spec-token-Zt4',
  practiceId: 91,
  appointmentFields: 'spec' as const,
  sizes: { patients: 70, appointmentsPerPatient: 2, eventTypes: 2, providers: 2, waitlist: 0, waitlistSlots: 0 },
};

let sim: Simulator;
let db: TestDatabase;
let app: App;
let source: ProSourceConfig;

const stream = (resource: string) => PRO_STREAMS.find((s) => s.resource === resource)!;
const practice = () => sim.practice(PRACTICE.practiceId);

async function stored(): Promise<Map<number, { patient: number | null; gone: boolean }>> {
  const res = await db.pool.query<{ id: string; patient_id: string | null; gone: boolean }>(
    'SELECT id, patient_id, not_seen_since IS NOT NULL AS gone FROM pro_appointments WHERE source = $1',
    [source.name],
  );
  return new Map(res.rows.map((r) => [Number(r.id), { patient: r.patient_id === null ? null : Number(r.patient_id), gone: r.gone }]));
}

/** What the source holds: appointment id to patient id. */
function atSource(): Map<number, number> {
  return new Map(
    practice()
      .list('appointments')
      .map((a) => [a.appointmentId, a.patientId]),
  );
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, tenants: [], practices: [PRACTICE] });
  db = await createTestDatabase();
  const file = writeConfig({
    sources: [{ kind: 'pro', name: 'spec-pro', baseUrl: sim.proBaseUrl(), practiceId: PRACTICE.practiceId, token: PRACTICE.token }],
  });
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  source = config.sources[0] as ProSourceConfig;
  app = await openApp({ ...config, logLevel: 'silent' });
  await runStream(app.ctx, source, stream('patients'));
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

describe('Pro appointments from a server that sends only the spec fields', () => {
  it('store the patient each appointment was listed under', async () => {
    const first = await runStream(app.ctx, source, stream('appointments'));
    expect(first).toMatchObject({ status: 'succeeded', mode: 'full', inserted: 140 });
    const raw = await db.pool.query<{ keys: string[] }>(
      'SELECT DISTINCT array(SELECT k FROM jsonb_object_keys(raw) AS k ORDER BY k COLLATE "C") AS keys FROM pro_appointments',
    );
    expect(raw.rows).toEqual([{ keys: ['appointmentId', 'apptDate'] }]);
    const rows = await stored();
    expect(rows.size).toBe(140);
    for (const [id, patient] of atSource()) expect(rows.get(id), `appointment ${id}`).toEqual({ patient, gone: false });
  });

  it('mark an appointment removed at the source not seen on the next sweep, and only that one', async () => {
    const [removed] = practice().list('appointments');
    practice().remove('appointments', removed!.appointmentId);
    const sweep = await runStream(app.ctx, source, stream('appointments'), { full: true });
    expect(sweep).toMatchObject({ status: 'succeeded', mode: 'full', inserted: 0, updated: 0 });
    const rows = await stored();
    expect([...rows].filter(([, r]) => r.gone).map(([id]) => id)).toEqual([removed!.appointmentId]);
  });

  it('mark the appointments of a patient the source no longer returns not seen on the next sweep', async () => {
    const patient = practice().list('patients')[10]!;
    const theirs = practice()
      .list('appointments')
      .filter((a) => a.patientId === patient.patientId)
      .map((a) => a.appointmentId);
    expect(theirs.length).toBeGreaterThan(0);
    practice().remove('patients', patient.patientId);
    await runStream(app.ctx, source, stream('patients'));
    await runStream(app.ctx, source, stream('appointments'), { full: true });
    const rows = await stored();
    for (const id of theirs) expect(rows.get(id)?.gone, `appointment ${id}`).toBe(true);
    expect([...rows.values()].filter((r) => r.gone)).toHaveLength(theirs.length + 1);
  });

  it('repair rows stored without their patient on the next run, which sweeps every patient', async () => {
    // What an earlier version left behind: no patient_id anywhere; meanwhile one more appointment went away.
    await db.pool.query('UPDATE pro_appointments SET patient_id = NULL WHERE source = $1', [source.name]);
    const live = practice()
      .list('appointments')
      .filter((a) => practice().get('patients', a.patientId) !== undefined);
    const removed = live[3]!;
    practice().remove('appointments', removed.appointmentId);

    // A full sweep ran minutes ago, so without the repair this pass would read changed patients only (none).
    const run = await runStream(app.ctx, source, stream('appointments'));
    expect(run).toMatchObject({ status: 'succeeded', mode: 'full', inserted: 0, updated: live.length - 1 });
    const rows = await stored();
    expect(rows.get(removed.appointmentId)).toMatchObject({ gone: true });
    for (const [id, patient] of atSource()) {
      if (practice().get('patients', patient) !== undefined) expect(rows.get(id), `appointment ${id}`).toEqual({ patient, gone: false });
    }
    const current = [...rows.values()].filter((r) => !r.gone);
    expect(current.every((r) => r.patient !== null)).toBe(true);

    const next = await runStream(app.ctx, source, stream('appointments'));
    expect(next).toMatchObject({ status: 'succeeded', mode: 'incremental', requests: 0 });
  });
});
