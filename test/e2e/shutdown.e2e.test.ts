/**
 * SIGTERM and SIGINT to a running `pmsync sync`: it stops at a page boundary
 * with that page's checkpoint committed, exits 130, and the next run resumes
 * from there. A request hanging at the moment of the signal does not hold the
 * process until its timeout.
 */
import { setTimeout as wait } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, spawnCli, waitExit, writeConfig } from '../support/cli.ts';
import { coreEntry } from '../support/harness.ts';
import { waitUntil } from '../support/time-scale.ts';

const TENANT = { apikey: 'stop-key-W2', username: 'stop.user', password: 'stop-pass-Y5', variant: 'core' as const };
const ROWS = 10_000;
/** Far beyond any guard: a run that ends while a request hangs was ended by the signal, not by the hang or a timeout. */
const HANG_MS = 3_600_000;
/** Requests the simulator has begun to hold for HANG_MS: the test waits for one instead of guessing how long that takes. */
let hangsStarted = 0;

let sim: Simulator;
let db: TestDatabase;
/** Each source has a file of its own: they read one account on purpose, which one configuration refuses. */
let configOf: (source: string) => string;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 6,
    delay: (ms, signal) => {
      if (ms === HANG_MS) hangsStarted += 1;
      return wait(ms, undefined, { signal });
    },
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: ROWS } }],
  });
  db = await createTestDatabase();
  const entry = (name: string) => coreEntry(sim, name, TENANT, { streams: ['customers'], lagSeconds: 0 });
  const entries: Record<string, Record<string, unknown>> = {
    term: entry('term'),
    int: entry('int'),
    hung: { ...entry('hung'), requestTimeoutMs: 2 * HANG_MS },
  };
  const files = new Map(Object.entries(entries).map(([name, e]) => [name, writeConfig({ sources: [e] })]));
  configOf = (source) => files.get(source)!;
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

const env = () => cliEnv({ DATABASE_URL: db.url, LOG_LEVEL: 'info' });

async function progress(source: string): Promise<{ rows: number; pagesRead: number | null; runs: string[] }> {
  const rows = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE source = $1', [source]);
  const st = await db.pool.query<{ window: { paging?: { pagesRead: number } } | null }>(
    'SELECT "window" FROM pmsync.sync_state WHERE source = $1',
    [source],
  );
  const runs = await db.pool.query<{ status: string }>('SELECT status FROM pmsync.runs WHERE source = $1 ORDER BY id', [source]);
  return { rows: rows.rows[0]!.n, pagesRead: st.rows[0]?.window?.paging?.pagesRead ?? null, runs: runs.rows.map((r) => r.status) };
}

describe('shutdown signals', () => {
  for (const [signal, source] of [
    ['SIGTERM', 'term'],
    ['SIGINT', 'int'],
  ] as const) {
    it(`${signal} stops at a page boundary with the checkpoint committed, exits 130, and the next run resumes`, async () => {
      sim.setFaults({ slowMs: 25 });
      const child = spawnCli(['--config', configOf(source), 'sync', '--source', source], env());
      const exited = waitExit(child);
      await waitUntil(async () => ((await progress(source)).pagesRead ?? 0) >= 3, 'three committed pages');
      child.kill(signal);
      const res = await exited;
      expect(res.code).toBe(130);
      expect(res.stderr).toMatch(/shutdown requested: stopping at the next page boundary/);
      expect(res.stdout).toMatch(
        new RegExp(`${source}: stopped: Stopped by a shutdown signal at a page boundary; the checkpoint is saved`),
      );

      const stopped = await progress(source);
      expect(stopped.pagesRead).not.toBeNull();
      expect(stopped.rows).toBe(100 * stopped.pagesRead!);
      expect(stopped.rows).toBeLessThan(ROWS);
      expect(stopped.runs).toEqual(['interrupted']);

      sim.setFaults({});
      const resumed = await runCli(['--config', configOf(source), 'sync', '--source', source], env());
      expect(resumed.code).toBe(0);
      const done = await progress(source);
      expect(done).toMatchObject({ rows: ROWS, pagesRead: null, runs: ['interrupted', 'succeeded'] });
      expect(resumed.stdout).toMatch(
        new RegExp(`${source}/customers: succeeded, incremental, ${ROWS / 100 - stopped.pagesRead!} page\\(s\\)`),
      );
    });
  }

  it('a signal during a hanging request ends that request instead of waiting for its timeout', async () => {
    const child = spawnCli(['--config', configOf('hung'), 'sync', '--source', 'hung'], env());
    const exited = waitExit(child);
    await waitUntil(async () => ((await progress('hung')).pagesRead ?? 0) >= 2, 'two committed pages');
    sim.setFaults({ slowMs: 5, timeoutRate: 1, hangMs: HANG_MS });
    await waitUntil(async () => hangsStarted > 0, 'a request to hang');
    child.kill('SIGTERM');
    await waitUntil(() => child.exitCode !== null, 'the run to end while its request hangs');
    const res = await exited;
    sim.setFaults({});
    expect(res.code).toBe(130);
    // The simulator logs a request when its connection closes: the hanging one was cut short.
    await waitUntil(async () => sim.stats().requests.some((r) => r.fault === 'timeout'), 'the hanging request to close');
    const stopped = await progress('hung');
    expect(stopped.rows).toBe(100 * stopped.pagesRead!);
  });
});
