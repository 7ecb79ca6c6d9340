/**
 * Pro API to PostgreSQL end to end: the CLI as a child process against the
 * simulator and a real database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RequestLogEntry, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, spawnCli, waitExit, writeConfig, type CliResult } from '../support/cli.ts';
import { FAN_OUT_BATCH } from '../../src/sync/readers/fan-out.ts';
import { waitUntil } from '../support/time-scale.ts';

const CLINIC = {
  token: 'e2e-pro-token-Vb8',
  practiceId: 501,
  sizes: { patients: 200, appointmentsPerPatient: 2, eventTypes: 4, providers: 3, waitlist: 8, waitlistSlots: 8 },
};
const EMPTY = {
  token: 'e2e-pro-empty-Ks2',
  practiceId: 502,
  sizes: { patients: 0, appointmentsPerPatient: 0, eventTypes: 0, providers: 0, waitlist: 0, waitlistSlots: 0 },
};
const BUSY = {
  token: 'e2e-pro-busy-Jd5',
  practiceId: 503,
  sizes: { patients: 30, appointmentsPerPatient: 1, eventTypes: 1, providers: 1, waitlist: 0, waitlistSlots: 0 },
};
const TOKENS = [CLINIC.token, EMPTY.token, BUSY.token];

let sim: Simulator;
let db: TestDatabase;
let config: string;
const outputs: CliResult[] = [];

function pro(name: string, p: { token: string; practiceId: number }, extra: Record<string, unknown> = {}) {
  return { kind: 'pro', name, baseUrl: sim.proBaseUrl(), practiceId: p.practiceId, token: p.token, ...extra };
}

async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const res = await runCli(['--config', config, ...args], cliEnv({ DATABASE_URL: db.url, ...env }));
  outputs.push(res);
  return res;
}

function requestsSince(from: number, practiceId: number): RequestLogEntry[] {
  return sim
    .stats()
    .requests.slice(from)
    .filter((r) => r.api === 'pro' && r.practiceId === practiceId);
}

const count = (entries: RequestLogEntry[], pattern: RegExp) => entries.filter((r) => pattern.test(r.path)).length;

async function rowCount(table: string, source: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE source = $1`, [source]);
  return r.rows[0]!.n;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, tenants: [], practices: [CLINIC, EMPTY, BUSY] });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [
      pro('clinic', CLINIC, { concurrency: 3 }),
      pro('empty', EMPTY),
      pro('busy', BUSY, { concurrency: 3, limiter: { maxConcurrent: 16 }, appointments: { fullSweepHours: 0 } }),
      pro('wrong-token', { ...CLINIC, token: 'not-the-token-Zz1' }),
      pro('clinic-sweep', CLINIC, { concurrency: 3, appointments: { fullSweepHours: 0 } }),
    ],
  });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync sync against the Pro simulator', () => {
  it('syncs every Pro resource with one request per list page and one per patient, sending only GETs', async () => {
    const from = sim.stats().requests.length;
    const res = await cli(['sync', '--source', 'clinic']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const practice = sim.practice(CLINIC.practiceId);
    expect(await rowCount('pro_patients', 'clinic')).toBe(200);
    expect(await rowCount('pro_appointments', 'clinic')).toBe(practice.list('appointments').length);
    expect(await rowCount('pro_event_types', 'clinic')).toBe(4);
    expect(await rowCount('pro_waitlist_slots', 'clinic')).toBe(8);
    expect(await rowCount('pro_waitlist_entries', 'clinic')).toBe(new Set(practice.list('waitlistSlots').map((s) => s.waitlistId)).size);
    const capture = await db.pool.query(
      "SELECT event_types, slots FROM pro_availability_captures WHERE source = 'clinic' AND completed_at IS NOT NULL",
    );
    expect(capture.rows).toEqual([{ event_types: 4, slots: await rowCount('pro_availability_slots', 'clinic') }]);

    const seen = requestsSince(from, CLINIC.practiceId);
    expect(new Set(seen.map((r) => r.method))).toEqual(new Set(['GET']));
    // 200 patients at Limit=100: two full pages and the empty page that ends the list
    expect(count(seen, /\/patients$/)).toBe(3);
    expect(count(seen, /\/patients\/\d+\/appointments$/)).toBe(200);
    expect(count(seen, /\/event-types$/)).toBe(2); // the list, and the availability capture's copy
    expect(res.stdout).toMatch(/clinic\/appointments: succeeded, full, 4 page\(s\), 200 request\(s\), 400 inserted/);
  });

  it('a rerun refreshes the lists but reads appointments only of new and changed patients', async () => {
    const practice = sim.practice(CLINIC.practiceId);
    const [changed] = practice.list('patients');
    practice.update('patients', changed!.patientId, { cellPhone: '(212) 555-0199' });
    const newcomer = practice.create('patients', { firstName: 'Newcomer' });
    practice.create('appointments', { patientId: newcomer.patientId });
    const from = sim.stats().requests.length;
    const res = await cli(['sync', '--source', 'clinic']);
    expect(res.code).toBe(0);
    const seen = requestsSince(from, CLINIC.practiceId);
    expect(count(seen, /\/patients$/)).toBe(3);
    expect(
      seen
        .filter((r) => /\/appointments$/.test(r.path))
        .map((r) => r.path)
        .sort(),
    ).toEqual(
      [`/practices/501/patients/${changed!.patientId}/appointments`, `/practices/501/patients/${newcomer.patientId}/appointments`].sort(),
    );
    expect(res.stdout).toMatch(/clinic\/patients: succeeded, full, 3 page\(s\), 3 request\(s\), 1 inserted, 1 updated, 199 unchanged/);
    expect(res.stdout).toMatch(/clinic\/appointments: succeeded, incremental, 1 page\(s\), 2 request\(s\), 1 inserted/);
    expect(res.stdout).toMatch(/clinic\/availability: skipped/);
    const row = await db.pool.query('SELECT cell_phone FROM pro_patients WHERE source = $1 AND id = $2', ['clinic', changed!.patientId]);
    expect(row.rows).toEqual([{ cell_phone: '(212) 555-0199' }]);
  });

  it('syncs an empty practice: one request per list, nothing to fan out over', async () => {
    const from = sim.stats().requests.length;
    const res = await cli(['sync', '--source', 'empty']);
    expect(res.code).toBe(0);
    const seen = requestsSince(from, EMPTY.practiceId);
    expect(count(seen, /\/patients$/)).toBe(1);
    expect(count(seen, /\/appointments$/)).toBe(0);
    expect(count(seen, /\/waitlist-slots$/)).toBe(1);
    expect(count(seen, /\/waitlist\/\d+$/)).toBe(0);
    for (const t of [
      'pro_patients',
      'pro_appointments',
      'pro_event_types',
      'pro_waitlist_slots',
      'pro_waitlist_entries',
      'pro_availability_slots',
    ]) {
      expect(await rowCount(t, 'empty'), t).toBe(0);
    }
    const capture = await db.pool.query(
      "SELECT event_types, completed_at IS NOT NULL AS done FROM pro_availability_captures WHERE source = 'empty'",
    );
    expect(capture.rows).toEqual([{ event_types: 0, done: true }]);
  });

  it('keeps the per-patient fan-out within its concurrency bound', async () => {
    const slowMs = 150;
    sim.setFaults({ slowMs });
    try {
      const from = sim.stats().requests.length;
      const res = await cli(['sync', '--source', 'busy', '--resource', 'patients', 'appointments']);
      expect(res.code).toBe(0);
      const arrivals = requestsSince(from, BUSY.practiceId)
        .filter((r) => /\/appointments$/.test(r.path))
        .map((r) => r.at.getTime())
        .sort((a, b) => a - b);
      expect(arrivals).toHaveLength(30);
      // Each request is held slowMs before it is answered, so requests arriving within
      // less than slowMs of each other were in flight together.
      let maxInFlight = 0;
      for (let i = 0, j = 0; i < arrivals.length; i++) {
        while (arrivals[i]! - arrivals[j]! >= slowMs - 10) j++;
        maxInFlight = Math.max(maxInFlight, i - j + 1);
      }
      expect(maxInFlight).toBeLessThanOrEqual(3);
      expect(maxInFlight).toBeGreaterThanOrEqual(2);
    } finally {
      sim.setFaults({});
    }
  });

  it('a fan-out killed mid-run resumes from its last committed batch: nothing lost, nothing doubled', async () => {
    expect((await cli(['sync', '--source', 'clinic-sweep', '--resource', 'patients'])).code).toBe(0);
    const patients = await rowCount('pro_patients', 'clinic-sweep');
    sim.setFaults({ slowMs: 20 });
    try {
      const from = sim.stats().requests.length;
      const appointmentReads = () => count(requestsSince(from, CLINIC.practiceId), /\/appointments$/);
      const child = spawnCli(
        ['--config', config, 'sync', '--source', 'clinic-sweep', '--resource', 'appointments'],
        cliEnv({ DATABASE_URL: db.url }),
      );
      await waitUntil(() => appointmentReads() >= 2 * FAN_OUT_BATCH + 10, 'the sweep to read its third batch of appointments', {
        everyMs: 10,
      });
      child.kill('SIGKILL');
      outputs.push(await waitExit(child));
      const killedAfter = appointmentReads();

      const status = await cli(['status', '--source', 'clinic-sweep']);
      expect(status.stdout).toMatch(/source clinic-sweep \(pro\)\n(.*\n)* {2}appointments .* resumes after key \d+/);
      const res = await cli(['sync', '--source', 'clinic-sweep', '--resource', 'appointments']);
      expect(res.code).toBe(0);
      const total = appointmentReads();
      expect(total - killedAfter).toBeLessThan(patients);
      expect(total).toBeGreaterThanOrEqual(patients);
      expect(total).toBeLessThanOrEqual(patients + FAN_OUT_BATCH);
    } finally {
      sim.setFaults({});
    }
    const stored = await db.pool.query(
      "SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM pro_appointments WHERE source = 'clinic-sweep'",
    );
    const expected = sim.practice(CLINIC.practiceId).list('appointments').length;
    expect(stored.rows[0]).toEqual({ n: expected, d: expected });
    const runs = await db.pool.query(
      "SELECT status, error_code FROM pmsync.runs WHERE source = 'clinic-sweep' AND resource = 'appointments' ORDER BY id",
    );
    expect(runs.rows).toEqual([
      { status: 'interrupted', error_code: 'ABANDONED' },
      { status: 'succeeded', error_code: null },
    ]);
  });

  it('status shows every Pro resource, its rows and where it stands', async () => {
    const res = await cli(['status', '--json', '--check']);
    // The wrong-token source fails its check: status --check exits as a sync would (4, credentials).
    expect(res.code).toBe(4);
    const statuses = JSON.parse(res.stdout) as Array<{
      source: string;
      kind: string;
      quota: unknown;
      connectivity?: { ok: boolean };
      resources: Array<{ resource: string; table: string; rows: number; lastRun: { status: string } | null }>;
    }>;
    const clinic = statuses.find((s) => s.source === 'clinic')!;
    expect(clinic).toMatchObject({ kind: 'pro', quota: null, connectivity: { ok: true } });
    expect(clinic.resources.map((r) => r.resource)).toEqual([
      'patients',
      'event-types',
      'appointments',
      'waitlist-slots',
      'waitlist',
      'availability',
    ]);
    expect(clinic.resources.find((r) => r.resource === 'patients')).toMatchObject({
      table: 'pro_patients',
      rows: 201,
      lastRun: { status: 'succeeded' },
    });
    expect(statuses.find((s) => s.source === 'wrong-token')!.connectivity).toMatchObject({ ok: false });
  });

  it('refuses a wrong token with a clear message and exit code 4', async () => {
    const res = await cli(['sync', '--source', 'wrong-token']);
    expect(res.code).toBe(4);
    expect(res.stdout).toMatch(
      /wrong-token: stopped: source "wrong-token": GET .*\/practices\/501\/patients.* was refused \(401 Unauthorized\)\. Check the token of source "wrong-token" \(token in sources\[\d\] of \S+pmsync\.json\)\./,
    );
    expect(res.stdout).toMatch(/no "Bearer" word/);
    expect(res.stdout + res.stderr).not.toContain('not-the-token-Zz1');
  });

  it('refuses a token written with a Bearer prefix before sending anything', async () => {
    const file = writeConfig({ sources: [pro('bearer', { ...CLINIC, token: `Bearer ${CLINIC.token}` })] });
    const from = sim.stats().requests.length;
    const res = await runCli(['--config', file, 'sync'], cliEnv({ DATABASE_URL: db.url }));
    outputs.push(res);
    expect(res.code).toBe(3);
    expect(res.stderr).toContain(
      'source "bearer" (sources[0]): token is sent bare in the Authorization header: write the token alone, without a scheme word such as "Bearer"',
    );
    expect(sim.stats().requests.length).toBe(from);
  });

  it('never shows a token, even in debug logs', async () => {
    const res = await cli(['sync', '--source', 'busy', '--resource', 'patients', 'appointments'], { LOG_LEVEL: 'debug' });
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('"level":"debug"');
    for (const out of outputs) for (const token of TOKENS) expect(out.stdout + out.stderr).not.toContain(token);
  });
});
