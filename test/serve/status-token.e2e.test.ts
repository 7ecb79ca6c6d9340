/**
 * The status token of `pmsync serve`, over real HTTP against the real
 * process: with PMSYNC_STATUS_TOKEN (or _FILE) set, the status page and
 * /metrics answer 401 without the bearer token or with a wrong one, and 200
 * with it; the probes and the webhook path do not ask for it; the token never
 * reaches the logs. A bad token setting is refused at start-up with the
 * other configuration problems, and only serve reads it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { kill, startServeCli, type ServeProcess } from './support.ts';

const TENANT = { apikey: 'token-key-Ph7', username: 'token.user', password: 'token-pass-Zb3', variant: 'core' as const };
const TOKEN = randomBytes(24).toString('hex');

let sim: Simulator;
let db: TestDatabase;
let config: string;
const started: ServeProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator({ seed: 61, tenants: [{ ...TENANT, sizes: { customers: 5 } }] });
  db = await createTestDatabase();
  // Nothing is scheduled: these tests are about the endpoints.
  config = writeConfig({
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
      },
    ],
    schedules: { incremental: 'off', full: 'off', catchUp: false },
  });
});
afterEach(async () => {
  for (const p of started.splice(0)) {
    kill(p.child);
    await p.exited;
  }
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

async function serve(extra: Record<string, string>): Promise<ServeProcess> {
  const p = await startServeCli(['--config', config, '--no-webhooks'], cliEnv({ DATABASE_URL: db.url, ...extra }));
  started.push(p);
  return p;
}

async function get(
  url: string,
  authorization?: string,
  method = 'GET',
): Promise<{ status: string; challenge: string | null; body: string }> {
  const res = await fetch(url, { method, headers: authorization === undefined ? {} : { authorization } });
  return { status: String(res.status), challenge: res.headers.get('www-authenticate'), body: await res.text() };
}

describe('with PMSYNC_STATUS_TOKEN', () => {
  it('the status page and /metrics need the bearer token; the probes and the webhook path do not; the token is never logged', async () => {
    const p = await serve({ PMSYNC_STATUS_TOKEN: TOKEN });
    const serving = p.child.output.stderr.split('\n').find((l) => l.includes('"msg":"serving"'));
    expect(JSON.parse(serving!)).toMatchObject({ bearerTokenRequiredOn: ['/', '/metrics'] });

    for (const path of ['/', '/?source=clinic', '/metrics']) {
      const none = await get(`${p.url}${path}`);
      expect([path, none.status, none.challenge]).toEqual([path, '401', 'Bearer realm="pmsync"']);
      expect(JSON.parse(none.body)).toEqual({ error: 'this page needs "Authorization: Bearer <token>" (PMSYNC_STATUS_TOKEN)' });
      // Wrong: another token, one character short or over, the right one under another scheme.
      for (const wrong of ['Bearer not-the-token-at-all', `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${TOKEN}0`]) {
        const res = await get(`${p.url}${path}`, wrong);
        expect([path, wrong, res.status, res.challenge]).toEqual([path, wrong, '401', 'Bearer realm="pmsync", error="invalid_token"']);
        expect(res.body).not.toContain('clinic');
      }
      expect((await get(`${p.url}${path}`, `Basic ${TOKEN}`)).status).toBe('401');
    }
    expect((await get(`${p.url}/`, undefined, 'HEAD')).status).toBe('401');

    const page = await get(`${p.url}/`, `Bearer ${TOKEN}`);
    expect(page.status).toBe('200');
    expect(page.body).toMatch(/<html[\s\S]*clinic/);
    expect((await get(`${p.url}/?source=clinic`, `bearer ${TOKEN}`)).status).toBe('200');

    // What a Prometheus scrape with `authorization: { credentials: ... }` sends.
    const scrape = await get(`${p.url}/metrics`, `Bearer ${TOKEN}`);
    expect(scrape.status).toBe('200');
    expect(scrape.body).toMatch(/^pmsync_ready 1$/m);

    expect((await get(`${p.url}/healthz`)).status).toBe('200');
    expect((await get(`${p.url}/readyz`)).status).toBe('200');
    // No receiver runs here (--no-webhooks): the webhook path answers as before, never 401.
    expect((await get(`${p.url}/webhooks/clinic/x`)).status).toBe('404');

    kill(p.child);
    const res = await p.exited;
    expect(res.code).toBe(0);
    expect(`${res.stdout}\n${res.stderr}`).not.toContain(TOKEN);
  });

  it('PMSYNC_STATUS_TOKEN_FILE reads a mounted secret, without its trailing newline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-token-'));
    const token = randomBytes(20).toString('base64url');
    writeFileSync(join(dir, 'status-token'), `${token}\n`);
    const p = await serve({ PMSYNC_STATUS_TOKEN_FILE: join(dir, 'status-token') });
    expect((await get(`${p.url}/metrics`)).status).toBe('401');
    expect((await get(`${p.url}/metrics`, `Bearer ${token}\n`.trim())).status).toBe('200');
    expect((await get(`${p.url}/`, `Bearer ${token}`)).status).toBe('200');
    kill(p.child);
    expect((await p.exited).stderr).not.toContain(token);
  });
});

it('without a token every endpoint is open, as before', async () => {
  const p = await serve({});
  expect((await get(`${p.url}/`)).status).toBe('200');
  expect((await get(`${p.url}/metrics`)).status).toBe('200');
});

describe('a bad token setting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-token-'));
  const empty = join(dir, 'empty');
  writeFileSync(empty, '\n');
  const shortFile = join(dir, 'short');
  writeFileSync(shortFile, 'abc123\n');

  it.each([
    [
      'both set',
      { PMSYNC_STATUS_TOKEN: TOKEN, PMSYNC_STATUS_TOKEN_FILE: shortFile },
      'PMSYNC_STATUS_TOKEN and PMSYNC_STATUS_TOKEN_FILE are both set: set only one of them',
    ],
    [
      'a missing file',
      { PMSYNC_STATUS_TOKEN_FILE: join(dir, 'nowhere') },
      `PMSYNC_STATUS_TOKEN_FILE: file ${join(dir, 'nowhere')} does not exist (it holds the bearer token of the status page and /metrics)`,
    ],
    [
      'an empty file',
      { PMSYNC_STATUS_TOKEN_FILE: empty },
      `PMSYNC_STATUS_TOKEN_FILE: file ${empty} is empty (it should hold the bearer token of the status page and /metrics)`,
    ],
    [
      'a short token',
      { PMSYNC_STATUS_TOKEN_FILE: shortFile },
      'PMSYNC_STATUS_TOKEN_FILE: the token is shorter than 16 characters: use a random one, e.g. the output of "openssl rand -hex 32"',
    ],
    [
      'a token with a space',
      { PMSYNC_STATUS_TOKEN: `${TOKEN} x` },
      'PMSYNC_STATUS_TOKEN: the token must be printable ASCII without spaces or line breaks (it is sent as "Authorization: Bearer <token>")',
    ],
  ])('%s is refused at start-up (3), with every other problem, never quoting the token', async (_what, env, problem) => {
    const res = await runCli(['--config', config, 'serve', '--port', '0'], cliEnv({ DATABASE_URL: db.url, LOG_LEVEL: 'verbose', ...env }));
    expect(res.code).toBe(3);
    const problems = res.stderr.split('\n').filter((l) => l.startsWith('  - '));
    expect(problems).toEqual(
      expect.arrayContaining([`  - ${problem}`, expect.stringMatching(/^ {2}- LOG_LEVEL: "verbose" is not a log level/)]),
    );
    expect(res.stderr).not.toMatch(new RegExp(`${TOKEN}|abc123`));
  });

  it('is no concern of the other commands, which never read it', async () => {
    const res = await runCli(
      ['--config', config, 'status'],
      cliEnv({ DATABASE_URL: db.url, PMSYNC_STATUS_TOKEN_FILE: join(dir, 'nowhere') }),
    );
    expect(res.code, res.stderr).toBe(0);
  });
});
