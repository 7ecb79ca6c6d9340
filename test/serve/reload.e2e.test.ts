/**
 * `pmsync serve` as a child process takes a changed config file while it
 * runs: a source added (its secrets in files) is synced, an invalid edit is
 * refused with every problem logged while serving goes on, and a removed
 * source gets no more requests while its data stays.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { eventually, kill, startServeCli, type ServeProcess } from './support.ts';

const FIRST = { apikey: 'reload-key-A1', username: 'first.user', password: 'reload-pass-A1', variant: 'core' as const };
const SECOND = { apikey: 'reload-key-B2', username: 'second.user', password: 'reload-pass-B2', variant: 'core' as const };
const THIRD = { apikey: 'reload-key-C3', username: 'third.user', password: 'reload-pass-C3', variant: 'core' as const };
const SMALL = { companies: 2, employees: 5 };
/** Enough pages of customers, read slowly (the source's own limiter), for the second source to be caught mid-run. */
const SECOND_CUSTOMERS = 4_000;
const INLINE_SECRET = 'inline-secret-Z9q';

let sim: Simulator;
let db: TestDatabase;
let p: ServeProcess | undefined;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 17,
    tenants: [
      { ...FIRST, sizes: SMALL },
      { ...SECOND, sizes: { ...SMALL, customers: SECOND_CUSTOMERS } },
      { ...THIRD, sizes: SMALL },
    ],
  });
  db = await createTestDatabase();
});
afterAll(async () => {
  if (p) {
    kill(p.child, 'SIGKILL');
    await p.exited;
  }
  await sim?.close();
  await db?.drop();
});

function source(name: string, t: typeof FIRST, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    kind: 'core',
    baseUrl: sim.coreBaseUrl(),
    apikey: t.apikey,
    username: t.username,
    password: t.password,
    lagSeconds: 0,
    streams: ['companies', 'employees'],
    ...extra,
  };
}

const requestsOf = (apikey: string) => sim.stats().byApikey[apikey]?.requests ?? 0;

async function runs(name: string) {
  const res = await db.pool.query<{ resource: string; status: string; pages: number; started_at: Date }>(
    `SELECT resource, status, pages, started_at FROM pmsync.runs WHERE source = $1 ORDER BY id`,
    [name],
  );
  return res.rows;
}

async function rows(table: string, name: string): Promise<number> {
  return (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE source = $1`, [name])).rows[0]!.n;
}

/** Log lines (JSON) of the serve process with this message prefix, from the `from`-th line on. */
function logLines(msg: string, from = 0): Array<Record<string, unknown>> {
  return p!.child.output.stderr
    .split('\n')
    .slice(from)
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => typeof l.msg === 'string' && l.msg.startsWith(msg));
}

const lineCount = () => p!.child.output.stderr.split('\n').length - 1;

describe('pmsync serve reloads its config file', () => {
  it('adds a source on SIGHUP, refuses an invalid edit while serving on, and stops sending to a removed source', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-reload-'));
    const file = join(dir, 'pmsync.json');
    const write = (config: unknown) => writeFileSync(file, JSON.stringify(config, null, 2));
    const allSucceeded = async (name: string, streams: number) =>
      (await runs(name)).filter((r) => r.status === 'succeeded').length >= streams ? true : undefined;

    // 1. One source; no polling, so only SIGHUP reloads.
    write({ sources: [source('first', FIRST)], schedules: { tickSeconds: 1 }, serve: { reloadSeconds: 0 } });
    p = await startServeCli(['--config', file], cliEnv({ DATABASE_URL: db.url }));
    await eventually(() => allSucceeded('first', 2), 'the first source synced');
    expect(requestsOf(SECOND.apikey)).toBe(0);

    // 2. A second source whose secrets are files (with the trailing newline `echo` leaves), and polling every second.
    writeFileSync(join(dir, 'second-apikey'), `${SECOND.apikey}\n`);
    writeFileSync(join(dir, 'second-password'), `${SECOND.password}\n`);
    const second = source('second', SECOND, {
      apikey: { file: join(dir, 'second-apikey') },
      password: { file: 'second-password' },
      streams: ['customers', 'companies'],
      limiter: { maxConcurrent: 1, minTimeMs: 300 },
    });
    write({ sources: [source('first', FIRST), second], schedules: { tickSeconds: 1 }, serve: { reloadSeconds: 1 } });
    p.child.kill('SIGHUP');
    const [added] = await eventually(async () => {
      const l = logLines('config reloaded');
      return l.length > 0 ? l : undefined;
    }, 'the reload');
    expect(added).toMatchObject({
      level: 'info',
      added: ['second'],
      removed: [],
      settings: ['serve.reloadSeconds'],
      msg: 'config reloaded: sources added: second; settings changed: serve.reloadSeconds',
    });
    // Its streams start as first passes at the next tick.
    await eventually(
      async () =>
        (await runs('second')).some((r) => r.resource === 'customers' && r.status === 'running' && r.pages >= 2) ? true : undefined,
      'the second source being read',
    );
    expect(requestsOf(SECOND.apikey)).toBeGreaterThan(0);
    expect(await rows('customers', 'second')).toBeGreaterThan(0);
    expect(await (await fetch(`${p.url}/`)).text()).toMatch(/<h2 id="source-second">/);
    expect(await (await fetch(`${p.url}/metrics`)).text()).toMatch(/^pmsync_quota_used\{source="second"\} [1-9]\d*$/m);

    // 3. An invalid edit, seen by the poll: refused whole, every problem in one error line; serving goes on.
    const beforeRefusal = lineCount();
    write({
      sources: [
        source('first', FIRST, { dailyQuotaa: 5 }),
        { ...second, password: { file: join(dir, 'nowhere', 'second-password') } },
        source('third', THIRD, { apikey: INLINE_SECRET, baseUrl: 'http://remote.example/api/v1' }),
      ],
      schedules: { tickSeconds: 1 },
      serve: { reloadSeconds: 1 },
    });
    const [refused] = await eventually(async () => {
      const l = logLines('config file refused', beforeRefusal);
      return l.length > 0 ? l : undefined;
    }, 'the refusal');
    expect(refused).toMatchObject({ level: 'error', msg: expect.stringMatching(/^config file refused \(3 problems\)/) });
    expect(refused!.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/sources\[0\]: unknown key "dailyQuotaa" \(did you mean "dailyQuota"\?\)/),
        expect.stringMatching(
          /sources\[1\]\.password: file .*nowhere\/second-password does not exist \(it holds the API user's password\)/,
        ),
        expect.stringMatching(/source "third" \(sources\[2\]\): baseUrl is plain http:\/\/ to remote\.example: /),
      ]),
    );
    expect(await (await fetch(`${p.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const going = (await runs('second')).find((r) => r.resource === 'customers');
    expect(going?.status).toBe('running');
    expect(logLines('config reloaded')).toHaveLength(1);

    // 4. The second source removed (a third added), by SIGHUP: its run stops at a page boundary and nothing more is sent for it.
    const beforeRemoval = lineCount();
    write({ sources: [source('first', FIRST), source('third', THIRD)], schedules: { tickSeconds: 1 }, serve: { reloadSeconds: 1 } });
    p.child.kill('SIGHUP');
    const [removed] = await eventually(async () => {
      const l = logLines('config reloaded', beforeRemoval);
      return l.length > 0 ? l : undefined;
    }, 'the removal');
    expect(removed).toMatchObject({
      added: ['third'],
      removed: ['second'],
      msg: 'config reloaded: sources added: third; sources removed: second',
    });
    const removedAt = new Date();
    await eventually(async () => ((await runs('second')).every((r) => r.status !== 'running') ? true : undefined), 'its run to stop');
    const stopped = (await runs('second')).find((r) => r.resource === 'customers')!;
    expect(stopped.status).toBe('interrupted');
    expect(logLines('source removed: its runs here stop at their next page boundary', beforeRemoval)).toEqual([
      expect.objectContaining({ source: 'second', running: ['second/customers'] }),
    ]);
    expect(stopped.pages).toBeLessThan(SECOND_CUSTOMERS / 100);
    const sentToSecond = requestsOf(SECOND.apikey);

    await eventually(() => allSucceeded('third', 2), 'the third source synced');
    expect(requestsOf(THIRD.apikey)).toBeGreaterThan(0);
    expect(requestsOf(SECOND.apikey)).toBe(sentToSecond);
    expect((await runs('second')).filter((r) => r.started_at > removedAt)).toEqual([]);
    // Its data stays.
    expect(await rows('customers', 'second')).toBe(stopped.pages * 100);
    expect(await (await fetch(`${p.url}/`)).text()).not.toMatch(/<h2 id="source-second">/);
    expect(await (await fetch(`${p.url}/metrics`)).text()).not.toMatch(/^pmsync_quota_used\{source="second"\}/m);

    kill(p.child);
    const result = await p.exited;
    expect(result.code).toBe(0);
    for (const secret of [FIRST, SECOND, THIRD].flatMap((t) => [t.apikey, t.password]).concat(INLINE_SECRET)) {
      expect(result.stderr).not.toContain(secret);
      expect(result.stdout).not.toContain(secret);
    }
    p = undefined;
  });
});
