/**
 * DATABASE_URL over TLS, against a real PostgreSQL with ssl on whose
 * pg_hba.conf refuses connections in plain (test/support/tls-postgres.ts):
 * each `sslmode` means what it means for libpq, `verify-full` with the CA
 * file carries a migration and a sync, and every refused certificate says
 * what to change in DATABASE_URL, without the password.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';
import { startTlsPostgres, type TlsPostgres } from '../support/tls-postgres.ts';

const TENANT = { apikey: 'tls-key-Qe8', username: 'tls.user', password: 'tls-pass-Rw2', variant: 'core' as const };
const NOW = '2026-03-02T10:00:00.000Z';

let sim: Simulator;
let server: TlsPostgres;
let config: string;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 47,
    now: new TestClock(NOW).now,
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 12, companies: 2 } }],
  });
  server = await startTlsPostgres();
  config = writeConfig({ sources: [coreEntry(sim, 'clinic', TENANT, { streams: ['companies', 'customers'], lagSeconds: 0 })] });
});
afterAll(async () => {
  await server?.stop();
  await sim?.close();
});

async function cli(args: string[], databaseUrl: string): Promise<CliResult> {
  const res = await runCli(['--config', config, ...args], cliEnv({ DATABASE_URL: databaseUrl, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW }));
  // Whatever happens, the database password is never printed.
  expect(`${res.stdout}\n${res.stderr}`).not.toContain(server.password);
  return res;
}

describe('sslmode=verify-full with sslrootcert', () => {
  it('migrates and syncs over TLS, checking the certificate against the CA file and the host name', async () => {
    const url = `${server.url('localhost')}?sslmode=verify-full&sslrootcert=${server.caFile}`;
    const migrated = await cli(['migrate'], url);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(/^Applied \d+ migration\(s\)/);

    const synced = await cli(['sync'], url);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stdout).toMatch(/^clinic\/customers: succeeded/m);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const customers = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM customers WHERE source = 'clinic'");
      expect(customers.rows[0]!.n).toBe(12);
      const ssl = await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(ssl.rows[0]!.ssl).toBe(true);
    } finally {
      await client.end();
    }
  });

  it('a certificate signed by another CA than the file names is refused (6), saying to name the right CA', async () => {
    const res = await cli(['status'], `${server.url('localhost')}?sslmode=verify-full&sslrootcert=${server.otherCaFile}`);
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(
      /Cannot reach PostgreSQL at postgres:\/\/localhost:\d+\/postgres\?sslmode=verify-full&sslrootcert=\S+: unable to verify the first certificate\. The server's certificate is not signed by the CA in the sslrootcert file/,
    );
    expect(res.stderr).not.toMatch(/--use-system-ca|WARNING/);
  });

  it('without sslrootcert, a certificate of a private CA is refused (6), saying to add sslrootcert', async () => {
    const res = await cli(['status'], `${server.url('localhost')}?sslmode=verify-full`);
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(/not signed by a CA this machine trusts: add sslrootcert=\/path\/to\/ca\.pem/);
  });

  it('a host name the certificate does not name is refused (6), even with the right CA', async () => {
    const res = await cli(['status'], `${server.url('127.0.0.1')}?sslmode=verify-full&sslrootcert=${server.caFile}`);
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(
      /does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list\. The server's certificate does not name the host 127\.0\.0\.1/,
    );
  });

  it('a CA file that does not exist is a configuration error (3), before any connection', async () => {
    const res = await cli(['status'], `${server.url('localhost')}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem`);
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/DATABASE_URL sslrootcert: file \/nonexistent\/ca\.pem does not exist/);
  });
});

describe('the other modes, as libpq reads them', () => {
  it('verify-ca checks the CA but not the host name', async () => {
    const res = await cli(['status', '--json'], `${server.url('127.0.0.1')}?sslmode=verify-ca&sslrootcert=${server.caFile}`);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toHaveLength(1);
  });

  it('require encrypts without checking the certificate, and prints no driver warning', async () => {
    const res = await cli(['status', '--json'], `${server.url('127.0.0.1')}?sslmode=require`);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).not.toMatch(/WARNING|sslmode|uselibpqcompat/i);
  });

  it('without sslmode the connection is in plain, which this server refuses (6)', async () => {
    const res = await cli(['status'], server.url('localhost'));
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(/no encryption/);
  });
});
