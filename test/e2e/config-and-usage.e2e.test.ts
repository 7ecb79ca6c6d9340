/**
 * Where the CLI's sources come from, and one answer per mistake: a command-line
 * argument that names nothing is a usage error (2) listing the valid names; a
 * problem of the config file or the environment is a configuration error (3),
 * every one listed at once; neither sends a request. Requests are counted by
 * the simulator.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, ROOT, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'cfg-key-Hx4', username: 'cfg.user', password: 'cfg-pass-Vb7', variant: 'core' as const };
const NOW = '2026-03-02T10:00:00.000Z';
const CORE_ENV = { CORE_APIKEY: TENANT.apikey, CORE_USERNAME: TENANT.username, CORE_PASSWORD: TENANT.password };

let sim: Simulator;
let db: TestDatabase;
/** One source, "clinic", reading companies and customers. */
let config: string;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 31,
    now: new TestClock(NOW).now,
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 20, companies: 3 } }],
  });
  db = await createTestDatabase();
  config = writeConfig({ sources: [coreEntry(sim, 'clinic', TENANT, { streams: ['companies', 'customers'], lagSeconds: 0 })] });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

const env = (extra: Record<string, string> = {}) => cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW, ...extra });

/** Runs the CLI and returns its result with the requests the simulator answered meanwhile. */
async function cli(args: string[], extra: Record<string, string> = {}): Promise<CliResult & { requests: string[] }> {
  const from = sim.stats().requests.length;
  const res = await runCli(args, env(extra));
  return {
    ...res,
    requests: sim
      .stats()
      .requests.slice(from)
      .map((r) => r.path),
  };
}

const problemLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('  - '));

describe('where sources come from', () => {
  it('leftover CORE_* variables add no source beside a config file: one pass, under the name the file gives', async () => {
    // The same account through CORE_*, with another quota: it once added a second source, or refused the run.
    const res = await cli(['--config', config, 'sync'], { ...CORE_ENV, CORE_BASE_URL: sim.coreBaseUrl(), CORE_DAILY_QUOTA: '5000' });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^clinic\/companies: succeeded/),
      expect.stringMatching(/^clinic\/customers: succeeded/),
    ]);
    // Each list read once: one page each.
    expect(res.requests.sort()).toEqual(['/api/v1/companies', '/api/v1/customers']);
    const sources = await db.pool.query<{ source: string }>('SELECT DISTINCT source FROM pmsync.runs ORDER BY source');
    expect(sources.rows.map((r) => r.source)).toEqual(['clinic']);
  });

  it('a config file may read CORE_* variables by name, with no other CORE_* variable set', async () => {
    const file = writeConfig({
      sources: [
        {
          ...coreEntry(sim, 'by-name', TENANT, { streams: ['companies'], lagSeconds: 0 }),
          apikey: { env: 'CORE_APIKEY' },
          password: { env: 'CORE_PASSWORD' },
        },
      ],
    });
    const res = await cli(['--config', file, 'sync'], { CORE_APIKEY: TENANT.apikey, CORE_PASSWORD: TENANT.password });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^by-name\/companies: succeeded/);
    expect(res.stderr).not.toMatch(/CORE_BASE_URL/);
  });

  it('two sources reading the same account are refused at start-up with both names, unless their streams are disjoint', async () => {
    const file = writeConfig({
      sources: [
        coreEntry(sim, 'clinic', TENANT, { streams: ['companies', 'customers'] }),
        coreEntry(sim, 'clinic-copy', TENANT, { streams: ['customers', 'orders'], dailyQuota: 5000 }),
      ],
    });
    const res = await cli(['--config', file, 'sync']);
    expect(res.code).toBe(3);
    expect(problemLines(res.stderr)).toEqual([
      expect.stringMatching(
        /^ {2}- source "clinic" \(sources\[0\]\) and source "clinic-copy" \(sources\[1\]\) read the same account \(http:\/\/127\.0\.0\.1:\d+\/api\/v1 with the same gateway key\): both would fetch and store customers, each record twice/,
      ),
    ]);
    expect(res.requests).toEqual([]);

    const split = writeConfig({
      sources: [
        coreEntry(sim, 'split-a', TENANT, { streams: ['companies'], lagSeconds: 0 }),
        coreEntry(sim, 'split-b', TENANT, { streams: ['orders'], lagSeconds: 0 }),
      ],
    });
    const ok = await cli(['--config', split, 'sync']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^split-a\/companies: succeeded/m);
    expect(ok.stdout).toMatch(/^split-b\/orders: succeeded/m);
  }, 180_000);
});

describe('one answer per mistake', () => {
  it('status --check with no source configured fails the pre-flight check (3); plain status only reports', async () => {
    const check = await cli(['status', '--check']);
    expect(check.code).toBe(3);
    expect(check.stderr).toMatch(/no sources configured: set CORE_BASE_URL/);
    const status = await cli(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/No source is configured/);
    expect([...check.requests, ...status.requests]).toEqual([]);
  }, 180_000);

  it('an empty --id is a usage error (2), and no request is sent', async () => {
    for (const args of [['--id='], ['--id', ''], ['--id', ' ']]) {
      const res = await cli(['--config', config, 'resync', 'customers', ...args]);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/--id: empty; give the id of one record/);
      expect(res.requests).toEqual([]);
    }
  }, 180_000);

  it('a source, resource or table that does not exist is a usage error (2) that lists the valid names', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['sync', '--source', 'nosuch'], /--source nosuch: no such source; sources: clinic$/m],
      [
        ['sync', '--resource', 'custmers', 'ordrs'],
        /--resource custmers: source "clinic" \(core\) has no resource "custmers" \(did you mean "customers"\?\); resources: .*customers.*\n--resource ordrs: .*"ordrs" \(did you mean "orders"\?\)/,
      ],
      [['resync', 'custmers', '--id', 'x'], /no configured source has a resource "custmers" \(did you mean "customers"\?\); resources: /],
      [
        ['resync', 'customers', '--full', '--source', 'clinik'],
        /--source clinik: no such source \(did you mean "clinic"\?\); sources: clinic/,
      ],
      [['status', '--source', 'nosuch'], /--source nosuch: no such source; sources: clinic/],
      [
        ['repopulate', '--table', 'custmers'],
        /--table custmers: source "clinic" \(core\) has no such table \(did you mean "customers"\?\); tables: /,
      ],
    ];
    for (const [args, message] of cases) {
      const res = await cli(['--config', config, ...args]);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.requests).toEqual([]);
    }
  }, 360_000);

  it('a LOG_LEVEL that does not exist is a configuration error (3) naming the levels', async () => {
    const res = await cli(['--config', config, 'status'], { LOG_LEVEL: 'verbose' });
    expect(res.code).toBe(3);
    expect(problemLines(res.stderr)).toEqual([
      '  - LOG_LEVEL: "verbose" is not a log level: use one of fatal, error, warn, info, debug, trace, silent',
    ]);
  });

  it('lists the problems of every level of a config file at once', async () => {
    const file = writeConfig({
      colour: 'blue',
      sources: [coreEntry(sim, 'clinic', TENANT, { lagSeconds: -1, streams: ['custmers'], hours: ['Mon-Fri 8-19'] })],
      schedules: { budget: 'lots', overrides: [{ source: 'clinik', cron: 'off' }] },
      webhooks: { concurrency: 0 },
    });
    const res = await cli(['--config', file, 'sync'], { LOG_LEVEL: 'loud' });
    expect(res.code).toBe(3);
    const lines = problemLines(res.stderr);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/\(root\): unknown key "colour"/),
        expect.stringMatching(/sources\[0\]\.lagSeconds: /),
        expect.stringMatching(/sources\[0\]\.streams\[0\]: "custmers" is not a resource of the core API/),
        expect.stringMatching(/sources\[0\]\.hours: "Mon-Fri 8-19": not days and a range of times \(write e\.g\. "Mon-Fri 08:00-19:00"\)$/),
        expect.stringMatching(/schedules\.budget: /),
        expect.stringMatching(/schedules\.overrides\[0\]\.source: no source named "clinik" \(did you mean "clinic"\?\)$/),
        expect.stringMatching(/webhooks\.concurrency: /),
        expect.stringMatching(/LOG_LEVEL: "loud" is not a log level/),
      ]),
    );
    expect(lines).toHaveLength(8);
    expect(res.requests).toEqual([]);
  });
});

describe('machine-readable output', () => {
  /** Runs a command line the README shows, from the project's folder, as an operator's shell would. */
  function shell(command: string, args: string[]): Promise<CliResult> {
    return new Promise((resolve) => {
      const child = spawn(command, args, { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += String(d)));
      child.stderr.on('data', (d) => (stderr += String(d)));
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
  }

  it.each([
    ['npx pmsync --config FILE status --json', 'npx', ['pmsync', '--config', '<config>', 'status', '--json']],
    ['npm run -s pmsync -- --config FILE status --json', 'npm', ['run', '-s', 'pmsync', '--', '--config', '<config>', 'status', '--json']],
  ])('%s prints JSON alone on stdout', async (_form, command, args) => {
    const res = await shell(
      command,
      args.map((a) => (a === '<config>' ? config : a)),
    );
    expect(res.code, res.stderr).toBe(0);
    const statuses = JSON.parse(res.stdout) as Array<{ source: string }>;
    expect(statuses.map((s) => s.source)).toEqual(['clinic']);
  });
});
