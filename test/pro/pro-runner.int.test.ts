/**
 * The Pro runner against the simulator and a real PostgreSQL: what a pass
 * reads, what it writes, and how it resumes.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type ProSourceConfig } from '../../src/config/schema.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import type { SyncContext } from '../../src/sync/context.ts';
import { FAN_OUT_BATCH } from '../../src/sync/readers/fan-out.ts';
import { runStream } from '../../src/sync/run-stream.ts';
import { newProSession } from '../../src/sync/readers/pro-session.ts';
import { PRO_STREAMS } from '../../src/sync/streams/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { writeConfig } from '../support/cli.ts';

const PRACTICE = {
  token: 'int-pro-token-Hq3',
  practiceId: 77,
  sizes: { patients: 120, appointmentsPerPatient: 2, eventTypes: 3, providers: 3, waitlist: 6, waitlistSlots: 6 },
};

let sim: Simulator;
let db: TestDatabase;
let app: App;
let source: ProSourceConfig;
const logs: string[] = [];

const stream = (resource: string) => PRO_STREAMS.find((s) => s.resource === resource)!;
const withSignal = (signal: AbortSignal): SyncContext => ({ ...app.ctx, signal });

/** GET requests the simulator saw since `from`, by path pattern. */
function proRequests(from: number, pattern: RegExp): number {
  return sim
    .stats()
    .requests.slice(from)
    .filter((r) => r.api === 'pro' && pattern.test(r.path)).length;
}

async function rows<T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
  return (await db.pool.query(text, values)).rows as T[];
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, tenants: [], practices: [PRACTICE] });
  db = await createTestDatabase();
  const file = writeConfig({
    sources: [
      {
        kind: 'pro',
        name: 'pro-int',
        baseUrl: sim.proBaseUrl(),
        practiceId: PRACTICE.practiceId,
        token: PRACTICE.token,
        concurrency: 3,
        waitlistIds: [7_999],
      },
    ],
  });
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  source = config.sources[0] as ProSourceConfig;
  const sink = new PassThrough();
  sink.on('data', (d) => logs.push(String(d)));
  app = await openApp({ ...config, logLevel: 'debug' }, { logDestination: sink });
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

describe('Pro runner', () => {
  it('reads the patients list whole and marks the ones it no longer returns', async () => {
    const summary = await runStream(app.ctx, source, stream('patients'));
    expect(summary).toMatchObject({ status: 'succeeded', inserted: 120, requests: 2 });
    const gone = sim.practice(PRACTICE.practiceId).list('patients')[5]!;
    sim.practice(PRACTICE.practiceId).remove('patients', gone.patientId);
    await runStream(app.ctx, source, stream('patients'));
    const marked = await rows<{ id: number }>('SELECT id FROM pro_patients WHERE source = $1 AND not_seen_since IS NOT NULL', [
      source.name,
    ]);
    expect(marked.map((r) => r.id)).toEqual([gone.patientId]);
  });

  it('resumes an interrupted fan-out after the last committed batch, reading no patient twice', async () => {
    const abort = new AbortController();
    const ctx: SyncContext = { ...withSignal(abort.signal), onProgress: (e) => e.page === 1 && abort.abort() };
    const from = sim.stats().requests.length;
    await expect(runStream(ctx, source, stream('appointments'))).rejects.toMatchObject({ code: 'SHUTDOWN' });
    const [run] = await rows<{ status: string; pages: number }>(
      "SELECT status, pages FROM pmsync.runs WHERE source = $1 AND resource = 'appointments'",
      [source.name],
    );
    expect(run).toEqual({ status: 'interrupted', pages: 1 });
    expect(proRequests(from, /\/appointments$/)).toBe(FAN_OUT_BATCH);

    const resumed = await runStream(withSignal(new AbortController().signal), source, stream('appointments'));
    expect(resumed).toMatchObject({ status: 'succeeded', mode: 'full' });
    const live = 119; // one patient was removed above
    expect(proRequests(from, /\/appointments$/)).toBe(live);
    const expected = sim
      .practice(PRACTICE.practiceId)
      .list('appointments')
      .filter((a) => a.patientId !== undefined);
    const stored = await rows<{ n: number; distinct: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT id)::int AS distinct FROM pro_appointments WHERE source = $1',
      [source.name],
    );
    const ofLivePatients = expected.filter((a) => sim.practice(PRACTICE.practiceId).get('patients', a.patientId) !== undefined).length;
    expect(stored[0]).toEqual({ n: ofLivePatients, distinct: ofLivePatients });
  });

  it('between sweeps reads only new and changed patients, and marks appointments a patient no longer has', async () => {
    const practice = sim.practice(PRACTICE.practiceId);
    const unchanged = await runStream(app.ctx, source, stream('appointments'));
    expect(unchanged).toMatchObject({ status: 'succeeded', mode: 'incremental', requests: 0, pages: 0 });

    const [changed, other] = practice.list('patients');
    practice.update('patients', changed!.patientId, { lastName: 'Renamed' });
    const dropped = practice.list('appointments').find((a) => a.patientId === changed!.patientId)!;
    practice.remove('appointments', dropped.appointmentId);
    const newcomer = practice.create('patients', { firstName: 'New' });
    const booked = practice.create('appointments', { patientId: newcomer.patientId });
    // a booking for an unchanged patient waits for the next full sweep
    practice.create('appointments', { patientId: other!.patientId });

    await runStream(app.ctx, source, stream('patients'));
    const from = sim.stats().requests.length;
    const summary = await runStream(app.ctx, source, stream('appointments'));
    expect(summary).toMatchObject({ status: 'succeeded', mode: 'incremental', inserted: 1 });
    const paths = sim
      .stats()
      .requests.slice(from)
      .filter((r) => /\/appointments$/.test(r.path))
      .map((r) => r.path)
      .sort();
    expect(paths).toEqual(
      [`/practices/77/patients/${changed!.patientId}/appointments`, `/practices/77/patients/${newcomer.patientId}/appointments`].sort(),
    );
    const gone = await rows<{ not_seen: boolean }>(
      'SELECT not_seen_since IS NOT NULL AS not_seen FROM pro_appointments WHERE source = $1 AND id = $2',
      [source.name, dropped.appointmentId],
    );
    expect(gone).toEqual([{ not_seen: true }]);
    const fresh = await rows('SELECT patient_id, appt_date::text AS appt FROM pro_appointments WHERE source = $1 AND id = $2', [
      source.name,
      booked.appointmentId,
    ]);
    expect(fresh).toEqual([{ patient_id: newcomer.patientId, appt: booked.apptDate.replace('T', ' ') }]);

    const sweep = await runStream(app.ctx, { ...source, appointments: { fullSweepHours: 0 } }, stream('appointments'));
    expect(sweep).toMatchObject({ mode: 'full', inserted: 1 });
  });

  it('reads waitlist entries named by slots or configured, marking those that answer 404', async () => {
    await runStream(app.ctx, source, stream('waitlist-slots'));
    const from = sim.stats().requests.length;
    const summary = await runStream(app.ctx, source, stream('waitlist'));
    const named = new Set(
      sim
        .practice(PRACTICE.practiceId)
        .list('waitlistSlots')
        .map((s) => s.waitlistId),
    );
    expect(summary).toMatchObject({ status: 'succeeded', inserted: named.size });
    expect(proRequests(from, /\/waitlist\/\d+$/)).toBe(named.size + 1); // + the configured 7999, which answers 404
    const one = [...named][0]!;
    sim.practice(PRACTICE.practiceId).remove('waitlist', one);
    await runStream(app.ctx, source, stream('waitlist'));
    const marked = await rows<{ id: number }>('SELECT id FROM pro_waitlist_entries WHERE source = $1 AND not_seen_since IS NOT NULL', [
      source.name,
    ]);
    expect(marked.map((r) => r.id)).toEqual([one]);
  });

  it('captures availability, resumes an interrupted capture under the same captured_at, and waits out the interval', async () => {
    const practice = sim.practice(PRACTICE.practiceId);
    const eventTypes = practice.list('eventTypes');
    const pairs = eventTypes.flatMap((t) => practice.list('providers').filter((p) => p.eventTypeIds.includes(t.eventTypeId)));
    const abort = new AbortController();
    const ctx: SyncContext = { ...withSignal(abort.signal), onProgress: (e) => e.page === 1 && abort.abort() };
    const session = newProSession(source);
    await expect(runStream(ctx, source, stream('availability'), { session })).rejects.toMatchObject({ code: 'SHUTDOWN' });
    const open = await rows<{ completed: boolean; event_types: number }>(
      'SELECT completed_at IS NOT NULL AS completed, event_types FROM pro_availability_captures WHERE source = $1',
      [source.name],
    );
    expect(open).toEqual([{ completed: false, event_types: 1 }]);

    const done = await runStream(withSignal(new AbortController().signal), source, stream('availability'), { session });
    expect(done.status).toBe('succeeded');
    // the event type committed before the interruption was not read again
    const byRun = await rows<{ event_type_id: number; run_id: number }>(
      'SELECT DISTINCT event_type_id, run_id FROM pro_availability_providers WHERE source = $1 ORDER BY event_type_id',
      [source.name],
    );
    const firstRun = (
      await rows<{ id: number }>("SELECT min(id) AS id FROM pmsync.runs WHERE source = $1 AND resource = 'availability'", [source.name])
    )[0]!.id;
    expect(byRun.map((r) => r.event_type_id)).toEqual(eventTypes.map((t) => t.eventTypeId).sort((a, b) => a - b));
    expect(byRun.map((r) => r.run_id)).toEqual([firstRun, done.runId, done.runId]);
    const [capture] = await rows<{ completed: boolean; event_types: number; providers: number; slots: number }>(
      'SELECT completed_at IS NOT NULL AS completed, event_types, providers, slots FROM pro_availability_captures WHERE source = $1',
      [source.name],
    );
    expect(capture).toMatchObject({ completed: true, event_types: eventTypes.length, providers: pairs.length });
    const counted = await rows<{ slots: number; open: number }>(
      `SELECT (SELECT count(*)::int FROM pro_availability_slots WHERE source = $1) AS slots, (SELECT sum(open_slots)::int FROM pro_availability_providers WHERE source = $1) AS open`,
      [source.name],
    );
    expect(counted[0]).toEqual({ slots: capture!.slots, open: capture!.slots });
    expect(capture!.slots).toBeGreaterThan(0);

    expect(await runStream(app.ctx, source, stream('availability'))).toMatchObject({ status: 'skipped' });
    expect(await runStream(app.ctx, source, stream('availability'), { full: true })).toMatchObject({ status: 'succeeded' });
    const captures = await rows<{ n: number }>(
      'SELECT count(*)::int AS n FROM pro_availability_captures WHERE source = $1 AND completed_at IS NOT NULL',
      [source.name],
    );
    expect(captures[0]!.n).toBe(2);
  });

  it('sent only GETs, and never wrote the token to the logs or the database', async () => {
    const pro = sim.stats().requests.filter((r) => r.api === 'pro');
    expect(pro.length).toBeGreaterThan(0);
    expect(new Set(pro.map((r) => r.method))).toEqual(new Set(['GET']));
    expect(logs.join('')).not.toContain(PRACTICE.token);
    const dump = await rows<{ t: string }>(
      `SELECT string_agg(t::text, ' ') AS t FROM (
         SELECT row_to_json(r)::text AS t FROM pmsync.runs r UNION ALL SELECT row_to_json(s)::text FROM pmsync.sync_state s
         UNION ALL SELECT row_to_json(q)::text FROM pmsync.quarantine q UNION ALL SELECT row_to_json(u)::text FROM pmsync.quota_usage u
       ) x`,
    );
    expect(dump[0]!.t).not.toContain(PRACTICE.token);
  });
});
