/**
 * The README's first quick-start command, as a newcomer runs it: no DATABASE_URL,
 * no config, so pmsync starts its embedded PostgreSQL and the local simulator.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, ROOT, runCli, type CliResult } from '../support/cli.ts';
import { createTestDatabase } from '../support/db.ts';

/** Runs scripts/demo.ts in its own process, as `npm run demo` does once the dependencies are installed. */
function runDemo(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts/demo.ts'), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

const dataDir = mkdtempSync(join(tmpdir(), 'pmsync-demo-'));
chmodSync(dataDir, 0o755);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('npm run demo', () => {
  it('syncs the seeded simulator into an embedded PostgreSQL, twice, and says how to query it', async () => {
    const res = await runDemo(['--customers', '700'], cliEnv({ PMSYNC_DATA_DIR: dataDir }));
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/demo\/customers: succeeded, incremental, 7 page\(s\), 7 request\(s\), 700 inserted/);
    expect(res.stdout).toMatch(/demo\/customers: succeeded, incremental, 1 page\(s\), 1 request\(s\), 5 inserted, 25 updated/);
    expect(res.stdout).toMatch(/customers\s+705/);
    expect(res.stdout).toMatch(/customers_history\s+730 {2}\(history mode: 25 customers have an older version\)/);
    expect(res.stdout).toMatch(/psql postgres:\/\/postgres:pmsync@127\.0\.0\.1:\d+\/pmsync/);

    expect(res.stdout).toMatch(/npm run pmsync -- db +\(add --port N when port 54329 is taken\)/);

    // Data survives: a second demo on the same folder starts the same database again.
    const again = await runDemo(['--customers', '700'], cliEnv({ PMSYNC_DATA_DIR: dataDir }));
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/customers\s+705/);

    // The next thing a newcomer tries: status says why it has nothing to report, what is there, and what to do.
    const status = await runCli(['status'], cliEnv({ PMSYNC_DATA_DIR: dataDir }));
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^No source is configured, so there is nothing to report on\.$/m);
    expect(status.stdout).toMatch(/source "demo": 10 stream\(s\), last run \S+ \(written by "npm run demo" from its simulator\)/);
    expect(status.stdout).toMatch(
      /psql postgres:\/\/postgres:pmsync@127\.0\.0\.1:\d+\/pmsync -c "SELECT source, count\(\*\) FROM customers GROUP BY source"/,
    );
    expect(status.stdout).toMatch(/set CORE_BASE_URL, CORE_APIKEY, CORE_USERNAME and CORE_PASSWORD, or pass --config FILE/);
    const json = await runCli(['status', '--json'], cliEnv({ PMSYNC_DATA_DIR: dataDir }));
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([]);
    expect(json.stderr).toMatch(/No source is configured[\s\S]*source "demo"/);
  });

  it('with DATABASE_URL set, resets only its own rows and ledger, never those of real accounts', async () => {
    const db = await createTestDatabase();
    try {
      await db.pool.query(
        `INSERT INTO pmsync.quota_usage (key_id, quota_day, used, daily_limit) VALUES ('k_realaccount', current_date, 812, 1000)`,
      );
      await db.pool.query(
        `INSERT INTO customers (source, id, raw, content_hash, fetched_at) VALUES ('clinic', 'keep-me', '{}', 'h', now())`,
      );
      const res = await runDemo(['--customers', '150'], cliEnv({ DATABASE_URL: db.url }));
      expect(res.code, res.stderr).toBe(0);
      const ledger = await db.pool.query(`SELECT used FROM pmsync.quota_usage WHERE key_id = 'k_realaccount'`);
      expect(ledger.rows).toEqual([{ used: 812 }]);
      const kept = await db.pool.query(`SELECT count(*)::int AS n FROM customers WHERE source = 'clinic'`);
      expect(kept.rows[0].n).toBe(1);
      // The before/after query it suggests shows each changed customer's old email, then the new one.
      const query = /changed customers had before:\n\s+psql \S+ -c "(SELECT [^"]+)"/.exec(res.stdout)?.[1];
      expect(query, res.stdout).toBeDefined();
      const versions = await db.pool.query<{ id: string; email: string | null; valid_to: Date | null }>(query!);
      expect(versions.rows).toHaveLength(6);
      for (let i = 0; i < 6; i += 2) {
        const [before, after] = [versions.rows[i]!, versions.rows[i + 1]!];
        expect(after.id).toBe(before.id);
        expect(before.valid_to).not.toBeNull();
        expect(after.valid_to).toBeNull();
        expect(after.email).toMatch(/@new-provider\.example$/);
        expect(before.email).not.toBe(after.email);
      }
    } finally {
      await db.drop();
    }
  });
});
