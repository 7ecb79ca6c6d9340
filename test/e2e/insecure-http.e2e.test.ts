/**
 * A plain http:// API to another machine would carry the credentials and the
 * patients' records unencrypted: the CLI refuses it (3) saying what to fix,
 * unless the source accepts it (`allowInsecureHttp`, or
 * CORE_ALLOW_INSECURE_HTTP), and then warns once per process. The same rule
 * holds for the webhook receiver URL a source registers.
 */
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'clear-key-Tz4', username: 'clear.user', password: 'clear-pass-Mn6', variant: 'core' as const };
const NOW = '2026-03-02T10:00:00.000Z';
/** A host that is not this machine; nothing is sent to it (pmsync refuses it, or the command reads only the database). */
const ELSEWHERE = 'http://api.practice.internal/api/v1';
/** An address of this machine that is not loopback, through which the simulator is reached as another machine would be. */
const NETWORK_ADDRESS = Object.values(networkInterfaces())
  .flat()
  .find((a) => a?.family === 'IPv4' && !a.internal)?.address;

let sim: Simulator;
let db: TestDatabase;

beforeAll(async () => {
  sim = await startSimulator({
    host: '0.0.0.0',
    seed: 53,
    now: new TestClock(NOW).now,
    tenants: [{ ...TENANT, dailyQuota: 0, sizes: { customers: 9, companies: 2 } }],
  });
  db = await createTestDatabase();
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

async function cli(args: string[], sources: Array<Record<string, unknown>> | null, extra: Record<string, string> = {}): Promise<CliResult> {
  const config = sources ? ['--config', writeConfig({ sources })] : [];
  const res = await runCli([...config, ...args], cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: NOW, ...extra }));
  expect(`${res.stdout}\n${res.stderr}`).not.toMatch(new RegExp(`${TENANT.apikey}|${TENANT.password}`));
  return res;
}

const warnings = (stderr: string) => stderr.split('\n').filter((l) => /in plain http/.test(l));
const clinic = (extra: Record<string, unknown> = {}) =>
  coreEntry(sim, 'clinic', TENANT, { streams: ['companies', 'customers'], lagSeconds: 0, ...extra });

describe('baseUrl in plain http to another machine', () => {
  it('is refused (3) without the opt-in, saying to use https or set allowInsecureHttp', async () => {
    const res = await cli(['sync'], [clinic({ baseUrl: ELSEWHERE })]);
    expect(res.code).toBe(3);
    expect(res.stderr).toContain(
      'source "clinic" (sources[0]): baseUrl is plain http:// to api.practice.internal: the API credentials and patient data would cross the network unencrypted. ' +
        'Use https://, or, only where the network to the API is trusted (a private link or VPN), set "allowInsecureHttp": true on this source',
    );
  });

  it('through CORE_* variables, the refusal names CORE_ALLOW_INSECURE_HTTP, which takes true or false only', async () => {
    const env = { CORE_BASE_URL: ELSEWHERE, CORE_APIKEY: TENANT.apikey, CORE_USERNAME: TENANT.username, CORE_PASSWORD: TENANT.password };
    const refused = await cli(['status'], null, env);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(
      /source "core" \(CORE_\* environment variables\): baseUrl is plain http:\/\/.*set CORE_ALLOW_INSECURE_HTTP=true$/m,
    );

    const typo = await cli(['status'], null, { ...env, CORE_ALLOW_INSECURE_HTTP: 'yes' });
    expect(typo.code).toBe(3);
    expect(typo.stderr).toMatch(/CORE_ALLOW_INSECURE_HTTP "yes" is not valid: set it to true to accept a plain http/);

    const accepted = await cli(['status'], null, { ...env, CORE_ALLOW_INSECURE_HTTP: 'true' });
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(warnings(accepted.stderr)).toHaveLength(1);
  });

  it('is accepted with "allowInsecureHttp": true, with one warning per process', async () => {
    const res = await cli(['status', '--json'], [clinic({ baseUrl: ELSEWHERE, allowInsecureHttp: true })]);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual([expect.objectContaining({ source: 'clinic' })]);
    const [warning, ...more] = warnings(res.stderr);
    expect(more).toEqual([]);
    expect(JSON.parse(warning!)).toMatchObject({
      level: 'warn',
      source: 'clinic',
      host: 'api.practice.internal',
      msg: expect.stringMatching(/the API credentials and patient data cross the network unencrypted/),
    });
  });

  it.skipIf(NETWORK_ADDRESS === undefined)('syncs through it with the opt-in: every stream, one warning', async () => {
    const baseUrl = sim.coreBaseUrl().replace('127.0.0.1', NETWORK_ADDRESS!);
    const from = sim.stats().requests.length;
    const res = await cli(['sync'], [clinic({ baseUrl, allowInsecureHttp: true })]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^clinic\/customers: succeeded/m);
    expect(sim.stats().requests.length).toBeGreaterThan(from);
    expect(warnings(res.stderr)).toHaveLength(1);
    expect(warnings(res.stderr)[0]).toContain(new URL(baseUrl).host);
    const rows = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM customers WHERE source = 'clinic'");
    expect(rows.rows[0]!.n).toBe(9);
  });

  it('over https, or in plain http to this machine, nothing is said', async () => {
    const res = await cli(
      ['status'],
      [clinic({ allowInsecureHttp: true }), coreEntry(sim, 'other', TENANT, { baseUrl: 'https://api.practice.internal/api/v1' })],
    );
    expect(res.code, res.stderr).toBe(0);
    expect(warnings(res.stderr)).toEqual([]);
  });
});

describe('webhook receiver URL in plain http to another machine', () => {
  const receiver = 'http://sync.practice.internal';

  it('is refused (2) unless the source accepts plain http, and then registered with a warning', async () => {
    const refused = await cli(['webhooks', 'register', '--source', 'clinic', '--url', receiver, '--yes'], [clinic()]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      '--url http://sync.practice.internal/: plain http:// to sync.practice.internal would carry the webhook secret token and events unencrypted. ' +
        'Use https://, or, only where the network between the API and the receiver is trusted, set "allowInsecureHttp": true on source "clinic"',
    );
    expect(sim.tenant(TENANT.apikey).webhooks()).toEqual([]);

    const accepted = await cli(
      ['webhooks', 'register', '--source', 'clinic', '--url', receiver, '--yes'],
      [clinic({ allowInsecureHttp: true })],
    );
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(sim.tenant(TENANT.apikey).webhooks()).toHaveLength(6);
    expect(warnings(accepted.stderr)).toEqual([
      expect.stringMatching(/webhooks of source \\?"clinic\\?" to sync\.practice\.internal in plain http/),
    ]);
  });
});
