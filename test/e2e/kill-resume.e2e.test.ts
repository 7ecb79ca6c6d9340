/**
 * kill -9 at random moments of a 100,000-row sync run by the CLI as a child
 * process, then resume. Every page's rows and its checkpoint commit together,
 * so after any kill the table holds exactly the committed pages, and the run
 * that finishes leaves the same rows and cursor as an uninterrupted one.
 *
 * The twenty kills are chained through one sync (each run resumes the one
 * killed before it) rather than twenty syncs from scratch: a 100,000-row sync
 * takes 12-17 s here, and twenty full ones would spend most of the suite's
 * time budget on this file alone. Each run is killed once the simulator has
 * answered a seeded number of its requests (none: during start-up), spread so
 * that together the kills cover the sync from start-up to its last pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, spawnCli, waitExit, writeConfig } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';
import { scaled, waitUntil } from '../support/time-scale.ts';

const ROWS = 100_000;
const KILLS = 20;
const TENANT = { apikey: 'kill-key-R8', username: 'kill.user', password: 'kill-pass-T3', variant: 'core' as const };
const NOW = '2026-03-02T10:00:00.000Z';
const TIMEOUT = { timeout: scaled(300_000) };

let sim: Simulator;
let db: TestDatabase;
/** Each source has a file of its own: they read one account on purpose, which one configuration refuses. */
let configOf: (source: string) => string;

beforeAll(async () => {
  const clock = new TestClock(NOW);
  sim = await startSimulator({ seed: 11, now: clock.now, tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: ROWS } }] });
  db = await createTestDatabase();
  const entry = (name: string) => coreEntry(sim, name, TENANT, { dailyQuota: 10_000_000, streams: ['customers'] });
  const files = new Map(['base', 'killed'].map((name) => [name, writeConfig({ sources: [entry(name)] })]));
  configOf = (source) => files.get(source)!;
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

const env = () => cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW });

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Rows, run counts and checkpoint in ONE statement, hence one snapshot: a
 * COMMIT the killed process had already sent may still complete after it died,
 * and separate reads could see the rows before it and the checkpoint after it.
 */
async function state(source: string) {
  const res = await db.pool.query<{
    rows: number;
    inserted: number;
    updated: number;
    cursor: Date | null;
    window: { paging?: { pagesRead: number } } | null;
  }>(
    `SELECT (SELECT count(*)::int FROM customers WHERE source = $1) AS rows,
            (SELECT coalesce(sum(inserted), 0)::int FROM pmsync.runs WHERE source = $1) AS inserted,
            (SELECT coalesce(sum(updated), 0)::int FROM pmsync.runs WHERE source = $1) AS updated,
            (SELECT cursor FROM pmsync.sync_state WHERE source = $1 AND resource = 'customers') AS cursor,
            (SELECT "window" FROM pmsync.sync_state WHERE source = $1 AND resource = 'customers') AS window`,
    [source],
  );
  const r = res.rows[0]!;
  return { rows: r.rows, inserted: r.inserted, updated: r.updated, cursor: r.cursor ?? null, window: r.window ?? null };
}

describe('kill -9 and resume', TIMEOUT, () => {
  it(`${KILLS} seeded kills in a ${ROWS.toLocaleString('en')}-row sync lose and double nothing, and end as an uninterrupted run`, async () => {
    const base = await runCli(['--config', configOf('base'), 'sync', '--source', 'base'], env());
    expect(base.code, base.stderr).toBe(0);
    const baseline = await state('base');
    expect(baseline).toMatchObject({ rows: ROWS, inserted: ROWS, updated: 0, window: null });

    const random = rng(20_261_122);
    const kills: Array<{ afterRequests: number; rows: number }> = [];
    for (let i = 0; i < KILLS; i++) {
      // On average each run gets a twentieth of the sync's pages before it is killed.
      const afterRequests = Math.floor((random() * 2 * (ROWS / 100)) / KILLS);
      const from = sim.stats().requests.length;
      const child = spawnCli(['--config', configOf('killed'), 'sync', '--source', 'killed'], env());
      let ended = false;
      const exited = waitExit(child).finally(() => (ended = true));
      // A run that ends first (the last pages were fewer) is not killed. The poll is short, not busy:
      // stats() copies the request log, and the simulator serving the run shares this process.
      const sent = () => ended || sim.stats().requests.length - from >= afterRequests;
      await waitUntil(sent, `run ${i + 1} to end or send ${afterRequests} requests`, { timeoutMs: 60_000, everyMs: 5 });
      child.kill('SIGKILL');
      const res = await exited;
      const s = await state('killed');
      kills.push({ afterRequests, rows: s.rows });
      if (res.signal === 'SIGKILL' && s.window) {
        // Exactly the committed pages are stored: each page's rows landed with the checkpoint after it.
        expect(s.rows).toBe(Math.min(ROWS, 100 * (s.window.paging?.pagesRead ?? 0)));
      }
      // No page was written twice, and no row counted twice.
      expect(s.inserted).toBe(s.rows);
      expect(s.updated).toBe(0);
    }
    expect(kills.filter((k) => k.rows > 0 && k.rows < ROWS).length).toBeGreaterThanOrEqual(KILLS / 2);

    const resumed = await runCli(['--config', configOf('killed'), 'sync', '--source', 'killed'], env());
    expect(resumed.code, resumed.stderr).toBe(0);
    const final = await state('killed');
    expect(final).toMatchObject({ rows: ROWS, inserted: ROWS, updated: 0, window: null });
    expect(final.cursor).toEqual(baseline.cursor);

    const differ = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM
         (SELECT id, content_hash, raw, source_modified_at, not_seen_since FROM customers WHERE source = 'killed') k
         FULL JOIN (SELECT id, content_hash, raw, source_modified_at, not_seen_since FROM customers WHERE source = 'base') b USING (id)
       WHERE k.id IS NULL OR b.id IS NULL OR k.content_hash <> b.content_hash OR k.raw <> b.raw
         OR k.source_modified_at IS DISTINCT FROM b.source_modified_at OR k.not_seen_since IS DISTINCT FROM b.not_seen_since`,
    );
    expect(differ.rows[0]!.n).toBe(0);
  });
});
