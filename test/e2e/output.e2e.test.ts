/**
 * Output that fits where it runs, through the real CLI: the summary on
 * stdout and logs on stderr (JSON off a terminal, pretty on one or when
 * asked), --quiet for cron, progress lines at a steady interval in a log, and
 * on a real terminal (a pseudo-terminal from script(1)) a bar that log lines
 * never break.
 */
import { execFileSync, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { CLI, cliEnv, ROOT, runCli, writeConfig } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'Apikey-Out-1', username: 'out.user', password: 'Pw-Out-2', variant: 'core' as const };

let sim: Simulator;
let db: TestDatabase;
let config: string;
// The simulator stamps ModifiedOn and pmsync reads its clock from this one, moved by hand between runs.
const clock = new TestClock('2026-03-02T10:00:00.000Z');

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, now: clock.now, tenants: [{ ...TENANT, sizes: { customers: 900, orders: 120 } }] });
  db = await createTestDatabase();
  // lagSeconds 0: changes made by the test a second ago (by the clock) are read at once.
  config = writeConfig({ sources: [coreEntry(sim, 'clinic', TENANT, { streams: ['customers', 'orders'], lagSeconds: 0 })] });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

const env = (extra: Record<string, string> = {}) =>
  cliEnv({ DATABASE_URL: db.url, LOG_LEVEL: 'info', NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), ...extra });

describe('where output goes', () => {
  it('off a terminal: the summary alone on stdout, JSON log lines on stderr with progress lines at a steady interval', async () => {
    // Pages slower than the progress interval: every page in flight is reported at least once.
    sim.setFaults({ slowMs: 150 });
    const res = await runCli(['--config', config, 'sync', '--resource', 'customers'], env({ PMSYNC_PROGRESS_SECONDS: '0.03' }));
    sim.setFaults({});
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe(
      'clinic/customers: succeeded, incremental, 9 page(s), 9 request(s), 900 inserted, 0 updated, 0 unchanged, 0 rejected\n',
    );
    const logs = res.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs.map((l) => l.msg)).toEqual(expect.arrayContaining(['run started', 'run finished']));

    const progress = logs.filter((l) => typeof l.page === 'number');
    expect(progress.length).toBeGreaterThanOrEqual(8);
    for (const p of progress) {
      expect(p).toMatchObject({ level: 'info', source: 'clinic', resource: 'customers', totalPages: 9 });
      const page = p.page as number;
      // One request and 100 rows per page; the quota left follows the ledger.
      expect(p.requests).toBe(page);
      expect(p.rows).toBe(page * 100);
      // A request is counted before it is sent: the next pages' (two at once, the limiter's default) may be in flight.
      expect(p.quotaLeft as number).toBeLessThanOrEqual(1000 - page);
      expect(p.quotaLeft as number).toBeGreaterThanOrEqual(1000 - page - 2);
      expect(p.msg).toMatch(
        new RegExp(`^customers: page ${page} of 9, ${page * 100} rows, ${page} request\\(s\\), ${p.quotaLeft} left of the quota today`),
      );
    }
    const pages = progress.map((p) => p.page as number);
    expect(pages).toEqual([...pages].sort((a, b) => a - b));
    expect(new Set(pages).size).toBeGreaterThanOrEqual(8);
    expect(progress.some((p) => typeof p.etaSeconds === 'number' && /about \d+ s to go|nearly done/.test(String(p.msg)))).toBe(true);
  });

  it('--log-format pretty writes one readable line per log entry, never JSON', async () => {
    const res = await runCli(['--config', config, 'sync', '--resource', 'orders', '--log-format', 'pretty'], env());
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d (INFO|WARN) {2}clinic\/orders /);
    expect(res.stderr).toMatch(/clinic\/orders run finished runId=\d+ pages=2 requests=2 inserted=120/);
  });

  it('--quiet prints nothing when all went well, and only what failed when not', async () => {
    const ok = await runCli(['--config', config, '-q', 'sync'], env());
    expect(ok).toMatchObject({ code: 0, stdout: '', stderr: '' });

    const wrong = writeConfig({ sources: [coreEntry(sim, 'clinic', { ...TENANT, password: 'Pw-Wrong-3' })] });
    const failed = await runCli(['--config', wrong, 'sync', '--quiet'], env());
    expect(failed.code).toBe(4);
    expect(failed.stdout).toMatch(/^clinic: stopped: .*401 Unauthorized/);
    expect(failed.stderr).toBe('');
  });

  it('a log format that does not exist is refused', async () => {
    const res = await runCli(['--config', config, 'status'], env({ PMSYNC_LOG_FORMAT: 'xml' }));
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/PMSYNC_LOG_FORMAT: "xml" is not a log format: use json or pretty/);
  });

  it('on a terminal: pretty lines, and a progress bar that log lines are printed above, never into', async () => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('script(1) from util-linux is needed to run pmsync on a pseudo-terminal');
    }
    sim.tenant(TENANT.apikey).touch('customers', 450);
    clock.advance(1_100); // ModifiedOn has whole seconds: the next run starts a second after the change
    sim.setFaults({ slowMs: 50 });
    const command = `${process.execPath} ${CLI} --config ${config} sync --resource customers`;
    const screen = await new Promise<string>((resolve, reject) => {
      const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: ROOT, env: { ...env(), TERM: 'xterm', COLUMNS: '120' } });
      let out = '';
      child.stdout.on('data', (d) => (out += String(d)));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`))));
    });
    sim.setFaults({});
    expect(screen).toMatch(/clinic\/customers \|█+░*\| page \d\/5 \(\d+ rows\)/);
    expect(screen).toMatch(/\d\d:\d\d:\d\d INFO {2}clinic\/customers run finished/);
    // Every log line starts a line of its own: after a newline, or after the bar was cleared.
    for (const m of screen.matchAll(/\d\d:\d\d:\d\d (INFO|WARN) /g)) {
      const before = screen.slice(Math.max(0, m.index - 5), m.index);
      expect(m.index === 0 || before.endsWith('\n') || before.endsWith('\r\x1b[2K'), JSON.stringify(before)).toBe(true);
    }
    expect(screen).not.toMatch(/^\{"level"/m);
    expect(screen).toMatch(/clinic\/customers: succeeded, incremental, 5 page\(s\)/);
  });
});
