/**
 * `pmsync resync` on Pro sources: the Pro API has no modification filter and
 * no single-record endpoint for its lists, so a Pro resync is a full pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';

const PRACTICE = {
  token: 'resync-pro-token-Q8',
  practiceId: 515,
  sizes: { patients: 130, appointmentsPerPatient: 1, eventTypes: 3, providers: 2, waitlist: 4, waitlistSlots: 4 },
};

let sim: Simulator;
let db: TestDatabase;
let config: string;
const cli = (...args: string[]) => runCli(['--config', config, ...args], cliEnv({ DATABASE_URL: db.url }));

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, tenants: [], practices: [PRACTICE] });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [{ name: 'pro-clinic', kind: 'pro', baseUrl: sim.proBaseUrl(), practiceId: PRACTICE.practiceId, token: PRACTICE.token }],
  });
  const first = await cli('sync', '--resource', 'patients');
  expect(first.code, first.stderr).toBe(0);
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync resync on a Pro source', () => {
  it('--full re-reads the resource and marks rows the API no longer returns, without deleting them', async () => {
    const practice = sim.practice(PRACTICE.practiceId);
    const gone = practice.list('patients')[7]!;
    practice.remove('patients', gone.patientId);
    const res = await cli('resync', 'patients', '--full');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(
      /pro-clinic\/patients: succeeded, full, 2 page\(s\).*; 1 row\(s\) no longer returned by the API marked not_seen_since/,
    );
    const rows = await db.pool.query<{ id: number; not_seen: boolean }>(
      `SELECT id, not_seen_since IS NOT NULL AS not_seen FROM pro_patients WHERE source = 'pro-clinic' AND not_seen_since IS NOT NULL`,
    );
    expect(rows.rows).toEqual([{ id: gone.patientId, not_seen: true }]);
    const all = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pro_patients WHERE source = 'pro-clinic'`);
    expect(all.rows[0]!.n).toBe(130);
  });

  it('refuses --since and --id with the reason and what to run instead', async () => {
    for (const args of [
      ['--since', '2026-01-01'],
      ['--id', '42'],
    ]) {
      const res = await cli('resync', 'patients', ...args);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(
        /Pro source: the Pro API cannot list .* for patients; use "pmsync resync patients --source pro-clinic --full"/,
      );
    }
  });
});
