/**
 * What an operator sees when something is wrong, through the CLI: which
 * credentials to check after a 401, every configuration problem at once, which
 * service could not be reached and where, when a spent quota resumes, and
 * never a configured secret, in any output line or any database column.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'Apikey-Secret-7731', username: 'sec.user', password: 'Pw-Secret-4482', variant: 'core' as const };
const WRONG_PASSWORD = 'Pw-Wrong-5531';
const DOWN_APIKEY = 'Apikey-Down-2207';
const PRO = { token: 'ProToken-Secret-9920', practiceId: 77 };
const SECRETS = [
  TENANT.apikey,
  TENANT.password,
  WRONG_PASSWORD,
  DOWN_APIKEY,
  PRO.token,
  ...[TENANT.password, WRONG_PASSWORD].map((p) => Buffer.from(`${TENANT.username}:${p}`).toString('base64')),
];
const NOW = '2026-03-02T10:00:00.000Z';
const RETRY = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, maxElapsedMs: 5_000 };

let sim: Simulator;
let db: TestDatabase;
let config: string;
const outputs: CliResult[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    seed: 12,
    now: new TestClock(NOW).now,
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 900, orders: 150 } }],
    practices: [PRO],
  });
  db = await createTestDatabase();
  config = writeConfig({
    sources: [
      coreEntry(sim, 'clinic', TENANT, { retry: RETRY, streams: ['customers', 'orders', 'companies'] }),
      // The same account as clinic: it reads other resources, so the two are not refused as one account read twice.
      coreEntry(sim, 'wrongpw', { ...TENANT, password: WRONG_PASSWORD }, { retry: RETRY, streams: ['appointments'] }),
      { ...coreEntry(sim, 'down', { ...TENANT, apikey: DOWN_APIKEY }, { retry: RETRY }), baseUrl: 'http://127.0.0.1:1/api/v1' },
      { name: 'pro', kind: 'pro', baseUrl: sim.proBaseUrl(), practiceId: PRO.practiceId, token: PRO.token },
    ],
  });
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

async function cli(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
  const res = await runCli(
    ['--config', config, ...args],
    cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW, LOG_LEVEL: 'debug', ...extra }),
  );
  outputs.push(res);
  return res;
}

describe('clear errors from the CLI', () => {
  it('a 401 exits 4 and names the source and where its credentials are configured, once, and only what applies to a Core source', async () => {
    const res = await cli(['sync', '--source', 'wrongpw', '--resource', 'customers']);
    expect(res.code).toBe(4);
    const out = res.stdout + res.stderr;
    expect(out).toMatch(
      /source "wrongpw".*401 Unauthorized.*Check the gateway key and the API user of source "wrongpw" \(apikey, username and password in sources\[1\] of \S+pmsync\.json\); the user must be active\./,
    );
    // Said once, in the summary on stdout; the log line on stderr names the outcome only.
    expect(out.match(/401 Unauthorized/g)).toHaveLength(1);
    expect(res.stdout).toMatch(/^wrongpw: stopped: .*401 Unauthorized/m);
    expect(res.stderr).toMatch(/"msg":"run stopped"/);
    expect(res.stderr).toMatch(/"code":"AUTH_FAILED"/);
    // Advice for Subset and Pro sources does not apply to a Core source.
    expect(out).not.toMatch(/Subset|CustomAPI|Pro token/);
  });

  it('a 401 on a Subset source adds what is particular to Subset paths and keys', async () => {
    const file = writeConfig({
      sources: [
        {
          name: 'sub',
          kind: 'subset',
          baseUrl: sim.subsetBaseUrl('NoSuchSubset'),
          apikey: { env: 'SUB_KEY' },
          username: TENANT.username,
          password: TENANT.password,
          retry: RETRY,
        },
      ],
    });
    const res = await runCli(
      ['--config', file, 'sync', '--resource', 'companies'],
      cliEnv({ DATABASE_URL: db.url, SUB_KEY: TENANT.apikey }),
    );
    outputs.push(res);
    expect(res.code).toBe(4);
    expect(res.stdout).toMatch(
      /source "sub".*401 Unauthorized.*\(apikey \(environment variable SUB_KEY\), username and password in sources\[0\] of \S+\)/,
    );
    expect(res.stdout).toMatch(/A Subset source needs its Subset gateway key and the exact <SUBSET_NAME>/);
  });

  it('missing CORE_* variables are named, with what each holds', async () => {
    const res = await runCli(
      ['sync'],
      cliEnv({ DATABASE_URL: db.url, CORE_BASE_URL: sim.coreBaseUrl(), CORE_APIKEY: TENANT.apikey, CORE_DAILY_QUOTA: 'lots' }),
    );
    outputs.push(res);
    expect(res.code).toBe(3);
    const problems = res.stderr.split('\n').filter((l) => l.startsWith('  - '));
    expect(problems).toEqual([
      expect.stringMatching(
        /^ {2}- environment: CORE_USERNAME is not set: set it to the name of an active API user \(without ":"\)\. CORE_BASE_URL and CORE_APIKEY are set/,
      ),
      expect.stringMatching(/^ {2}- environment: CORE_PASSWORD is not set: set it to that API user's password\./),
      expect.stringMatching(
        /^ {2}- environment: CORE_DAILY_QUOTA "lots" is not valid: set it to the account's daily request quota, a whole number/,
      ),
    ]);
    expect(res.stderr).not.toMatch(/Invalid input|received undefined/);
  });

  it('with CORE_* variables, the 401 message names those variables', async () => {
    const res = await runCli(
      ['sync', '--resource', 'customers'],
      cliEnv({
        DATABASE_URL: db.url,
        CORE_BASE_URL: sim.coreBaseUrl(),
        CORE_APIKEY: TENANT.apikey,
        CORE_USERNAME: TENANT.username,
        CORE_PASSWORD: WRONG_PASSWORD,
      }),
    );
    outputs.push(res);
    expect(res.code).toBe(4);
    expect(res.stderr + res.stdout).toMatch(/source "core".*\(CORE_APIKEY, CORE_USERNAME and CORE_PASSWORD\); the user must be active/);
  });

  it('an unreachable API exits 6 and says which source and where', async () => {
    const res = await cli(['sync', '--source', 'down', '--resource', 'customers']);
    expect(res.code).toBe(6);
    expect(res.stdout + res.stderr).toMatch(
      /source "down": cannot reach http:\/\/127\.0\.0\.1:1\/api\/v1\/customers\?\S*apikey=\[REDACTED\] \(ECONNREFUSED/,
    );
  });

  it('an unreachable database exits 6 and says where, without its password', async () => {
    const res = await runCli(
      ['--config', config, 'status'],
      cliEnv({ DATABASE_URL: 'postgres://pmsync:Db-Secret-6610@127.0.0.1:1/pmsync' }),
    );
    outputs.push(res);
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(/Cannot reach PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/pmsync: .*ECONNREFUSED/);
    expect(res.stderr).not.toContain('Db-Secret-6610');
  });

  it('a configuration error lists every problem at once and exits 3', async () => {
    const bad = writeConfig({
      sources: [
        {
          name: 'Bad Name',
          kind: 'core',
          baseUrl: 'ftp://example.com/api/v1',
          apikey: { env: 'PMSYNC_TEST_UNSET_KEY' },
          username: 'a:b',
          password: 'Pw-Secret-4482',
        },
        { name: 'sub', kind: 'subset', baseUrl: 'https://example.com/api/v1', apikey: 'k', username: 'u', password: 'p', dailyQuota: 0 },
      ],
    });
    const res = await runCli(['--config', bad, 'sync'], cliEnv({ DATABASE_URL: 'mysql://nope' }));
    outputs.push(res);
    expect(res.code).toBe(3);
    const lines = res.stderr.split('\n').filter((l) => l.startsWith('  - '));
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/sources\[0\]\.name: use lowercase letters/),
        expect.stringMatching(/sources\[1\]\.dailyQuota: Too small/),
        expect.stringMatching(/sources\[0\]\.apikey: environment variable PMSYNC_TEST_UNSET_KEY is not set/),
        expect.stringMatching(/source "Bad Name" \(sources\[0\]\): baseUrl must use https:\/\//),
        expect.stringMatching(/source "Bad Name" \(sources\[0\]\): username must not contain ":"/),
        expect.stringMatching(/DATABASE_URL: must start with postgres:\/\//),
      ]),
    );
  });

  it('a 429 stops the run and says when requests resume; the next run sends nothing; both moved today, so exit 0', async () => {
    sim.setFaults({ quotaExhaustAfter: 3 });
    const res = await cli(['sync', '--source', 'clinic']);
    expect(res.code).toBe(0);
    expect(res.stdout + res.stderr).toMatch(
      /answered 429 for source "clinic".*checkpoint saved; requests resume after 2026-03-03T00:00:00.000Z/,
    );
    const before = sim.stats().requests.length;
    const again = await cli(['sync', '--source', 'clinic']);
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/nothing is sent until 2026-03-03T00:00:00.000Z/);
    expect(sim.stats().requests.length).toBe(before);
    const status = await cli(['status', '--source', 'clinic']);
    expect(status.stdout).toMatch(/EXHAUSTED until 2026-03-03T00:00:00.000Z/);
    // companies (1 page) finished; customers read page 1 and page 9 of 9 before the 429.
    // A backfill gets the allowance (900) less the budget held for the day's checks (150).
    expect(status.stdout).toMatch(/customers .*resumes at page 8 \(7 of 9 pages left, about 1 quota day\(s\) at 750 requests a day\)/);
    sim.setFaults({});
  });
});

describe('secrets', () => {
  it('never appear in any output line or any text or jsonb column after whole CLI runs', async () => {
    // A full sync the next day with retries, a quarantined record, and status.
    const tenant = sim.tenant(TENANT.apikey);
    const [bad] = tenant.touch('customers', 1);
    tenant.update('customers', String(bad!.CustomerId), { IsActive: 'yes' as unknown as boolean });
    sim.setFaults({ errorRate: 0.1 });
    const next = { PMSYNC_TEST_NOW: '2026-03-03T10:00:00.000Z' };
    const res = await cli(['sync', '--source', 'clinic'], next);
    sim.setFaults({});
    expect([0, 7]).toContain(res.code);
    expect(res.stderr).toMatch(/request failed; retrying/);
    expect(res.stdout).toMatch(/clinic\/customers: succeeded/);
    await cli(['status', '--json'], next);

    const out = outputs.map((o) => o.stdout + o.stderr).join('\n');
    expect(outputs.length).toBeGreaterThanOrEqual(9);
    for (const secret of SECRETS) {
      expect(out, secret).not.toContain(secret);
      expect(out, secret).not.toContain(encodeURIComponent(secret));
    }

    const columns = await db.pool.query<{ table_schema: string; table_name: string; column_name: string }>(
      `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_schema, table_name)
       WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
         AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')`,
    );
    expect(columns.rows.length).toBeGreaterThan(50);
    const stored = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pmsync.runs WHERE error_message IS NOT NULL');
    expect(stored.rows[0]!.n).toBeGreaterThan(0);
    const leaks: string[] = [];
    for (const c of columns.rows) {
      const ident = `"${c.table_schema}"."${c.table_name}"`;
      const res = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${ident} WHERE "${c.column_name}"::text LIKE ANY($1)`,
        [SECRETS.map((s) => `%${s}%`)],
      );
      if (res.rows[0]!.n > 0) leaks.push(`${ident}.${c.column_name}`);
    }
    expect(leaks).toEqual([]);
  });
});
