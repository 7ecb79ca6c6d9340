/**
 * Run history and stream status from the command line: `pmsync runs` lists
 * pmsync.runs newest first; `pmsync status` shows the budget, each stream's
 * schedule and where it stands, and the process running it now.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';

const TENANT = { apikey: 'history-key-T3', username: 'history.user', password: 'history-pass-R5', variant: 'core' as const };
const HOLDER = fileURLToPath(new URL('../scheduler/support/hold-lock.ts', import.meta.url));

let sim: Simulator;
let db: TestDatabase;
let config: string;
const cli = (...args: string[]) => runCli(['--config', config, ...args], cliEnv({ DATABASE_URL: db.url }));

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, tenants: [{ ...TENANT, sizes: { customers: 120, orders: 40 } }] });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
        lagSeconds: 0,
      },
    ],
    schedules: {
      overrides: [
        { resource: 'orders', cron: '5 4 * * *', timeZone: 'Europe/Berlin' },
        { resource: 'products', cron: 'off' },
      ],
    },
  });
  const sync = await cli('sync', '--resource', 'customers', 'orders', 'companies');
  expect(sync.code, sync.stderr).toBe(0);
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync runs', () => {
  it('lists recent runs newest first, narrowed and limited', async () => {
    const table = await cli('runs', '--limit', '2');
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^id\s+started \(UTC\)\s+source\/resource\s+mode\s+status\s+took\s+pages\s+req\s+ins\s+upd\s+same\s+rej\s+error$/,
    );
    expect(lines.length).toBe(3);

    const json = await cli('runs', '--json', '--resource', 'customers');
    const rows = JSON.parse(json.stdout) as Array<{ resource: string; status: string; inserted: number; requests: number }>;
    expect(rows).toEqual([expect.objectContaining({ resource: 'customers', status: 'succeeded', inserted: 120, requests: 2 })]);
    expect(JSON.parse((await cli('runs', '--json', '--status', 'failed')).stdout)).toEqual([]);
  });
});

describe('pmsync status', () => {
  it("shows each stream's serve schedule and which process runs it now", async () => {
    const holder = spawn(process.execPath, [HOLDER, db.url, 'clinic', 'orders', '0']);
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    try {
      const status = await cli('status');
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(
        /^ {2}budget 150 a day for checks, webhook-triggered checks and full refreshes: 0 spent \(check 0, webhook 0, full 0\), \d+ planned for the rest of the day/m,
      );
      expect(status.stdout).toMatch(/^ {2}outside the budget: backfill 4 spent, \d+ planned; resync 0 spent$/m);
      expect(status.stdout).toMatch(
        /^ {2}customers .*\n {6}serve: by budget; read up to \d+ min ago; ~[\d.]+ changes\/h expected now; ~[\d.]+ checks planned for the rest of the day/m,
      );
      expect(status.stdout).toMatch(/^ {2}companies .*\n {6}serve: by budget; read up to \d+ min ago/m);
      expect(status.stdout).toMatch(/^ {2}appointments .*never run\n {6}serve: by budget; first pass due now: backfill$/m);
      expect(status.stdout).toMatch(/^ {2}orders .*\n {6}serve: pinned to 5 4 \* \* \* Europe\/Berlin, next \S+; RUNNING NOW in \S+:\d+$/m);
      expect(status.stdout).toMatch(/^ {2}products .*\n {6}serve: off$/m);
    } finally {
      holder.stdin.end();
      await new Promise((r) => holder.on('exit', r));
    }
  });
});
