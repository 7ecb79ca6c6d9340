/**
 * Bad options and bad configuration through the CLI: usage errors exit 2 on
 * every subcommand, and a configuration with typos is refused, every problem
 * listed at once with a suggestion, before any command opens the database,
 * migrates it or sends a request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startHostileServer, type HostileServer } from './server.ts';

let db: TestDatabase;
let server: HostileServer;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  server = await startHostileServer();
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe('usage errors exit 2 on subcommands too', () => {
  it.each([
    [['sync', '--bogus'], /unknown option '--bogus'/],
    [['runs', '--limit', 'abc'], /option '-n, --limit <n>' argument 'abc' is invalid\. expected a positive number/],
    [['resync'], /missing required argument 'resource'/],
    [['status', '--nope'], /unknown option '--nope'/],
    [['webhooks', 'register', '--url', 'https://sync.example.com'], /required option '-s, --source <name>' not specified/],
    [['webhooks', 'dead-letters', '--limit', 'many'], /argument 'many' is invalid/],
  ])('pmsync %j', async (args, message) => {
    const res = await runCli(args, cliEnv({ DATABASE_URL: db.url }));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
  });
});

describe('a configuration with typos', () => {
  const config = () =>
    writeConfig({
      sources: [
        {
          name: 'clinic',
          kind: 'core',
          baseUrl: server.baseUrl,
          apikey: 'k-typo',
          username: 'u',
          password: 'p',
          dailyQuotaa: 500,
          streams: ['custmers'],
          fullRefresh: ['giftcertificate'],
        },
      ],
      schedules: { overrides: [{ source: 'clinik', cron: 'off' }] },
    });

  it.each([['sync'], ['status'], ['runs'], ['migrate'], ['resync', 'customers', '--full'], ['webhooks', 'list'], ['serve', '--port', '0']])(
    'pmsync %s lists every problem, then stops before the database or the API is touched',
    async (...args) => {
      const res = await runCli(['--config', config(), ...args], cliEnv({ DATABASE_URL: db.url }));
      expect(res.code).toBe(3);
      const lines = res.stderr.split('\n').filter((l) => l.startsWith('  - '));
      expect(lines).toEqual([
        expect.stringMatching(/sources\[0\]: unknown key "dailyQuotaa" \(did you mean "dailyQuota"\?\)$/),
        expect.stringMatching(/sources\[0\]\.streams\[0\]: "custmers" is not a resource of the core API \(did you mean "customers"\?\)$/),
        expect.stringMatching(
          /sources\[0\]\.fullRefresh\[0\]: "giftcertificate" is not a resource of the core API \(did you mean "giftcertificates"\?\)$/,
        ),
        expect.stringMatching(/schedules\.overrides\[0\]\.source: no source named "clinik" \(did you mean "clinic"\?\)$/),
      ]);
      const tables = await db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
      );
      expect(tables.rows[0]!.n).toBe(0);
      expect(server.requests).toEqual([]);
    },
  );

  it('a --resource or --source typo is a usage error with a suggestion and the valid names, before the database is migrated', async () => {
    const file = writeConfig({
      sources: [{ name: 'clinic', kind: 'core', baseUrl: server.baseUrl, apikey: 'k', username: 'u', password: 'p' }],
    });
    const resource = await runCli(['--config', file, 'sync', '--resource', 'custmers'], cliEnv({ DATABASE_URL: db.url }));
    expect(resource.code).toBe(2);
    expect(resource.stderr).toMatch(
      /--resource custmers: source "clinic" \(core\) has no resource "custmers" \(did you mean "customers"\?\); resources: companies, .*customers/,
    );
    const source = await runCli(['--config', file, 'sync', '--source', 'clinc'], cliEnv({ DATABASE_URL: db.url }));
    expect(source.code).toBe(2);
    expect(source.stderr).toMatch(/--source clinc: no such source \(did you mean "clinic"\?\); sources: clinic$/m);
    const tables = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    expect(tables.rows[0]!.n).toBe(0);
  });
});
