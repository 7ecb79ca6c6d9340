/**
 * The pmsync CLI against a misbehaving Core server (./server.ts): bad bytes in
 * records, paging headers that lie, a server that ignores Page, bodies too
 * large, error bodies carrying a secret, and a database lost mid-run. Each
 * test asserts the outcome an operator and an analyst would see: the exit
 * code, the message, the rows that landed, where the checkpoint stands, and
 * the requests the server counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { startHostileServer, type HostileServer } from './server.ts';

const APIKEY = 'Zq9-Secret-Key-0042';
const PASSWORD = 'Pw-Hostile-7713';
const RETRY = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, maxElapsedMs: 5_000 };

let db: TestDatabase;
let server: HostileServer;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startHostileServer();
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

function source(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    kind: 'core',
    baseUrl: server.baseUrl,
    apikey: APIKEY,
    username: 'hostile.user',
    password: PASSWORD,
    streams: ['customers'],
    retry: RETRY,
    ...extra,
  };
}

async function sync(sources: Array<Record<string, unknown>>, databaseUrl = db.url): Promise<CliResult> {
  return runCli(['--config', writeConfig({ sources }), 'sync'], cliEnv({ DATABASE_URL: databaseUrl }));
}

async function rows(name: string): Promise<number> {
  const r = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE source = $1', [name]);
  return r.rows[0]!.n;
}

async function checkpoint(name: string): Promise<{ cursor: Date | null; window: { nextPage: number } | null } | undefined> {
  const r = await db.pool.query('SELECT cursor, "window" FROM pmsync.sync_state WHERE source = $1 AND resource = \'customers\'', [name]);
  return r.rows[0];
}

describe('bad bytes in records', () => {
  it('a NUL or an unpaired surrogate quarantines that record only: the rest of the page lands and the stream moves on', async () => {
    server.set({ kind: 'bad-text', at: [2, 120] }, 150);
    const first = await sync([source('bytes')]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/bytes\/customers: succeeded, incremental, 2 page\(s\), 2 request\(s\), 148 inserted, .*2 rejected/);
    expect(server.count('/customers')).toBe(2);
    expect(await rows('bytes')).toBe(148);
    const state = await checkpoint('bytes');
    expect(state?.cursor).not.toBeNull();
    expect(state?.window).toBeNull();

    const q = await db.pool.query<{ record_id: string; first: string; last: string; reason: string }>(
      "SELECT record_id, raw->>'FirstName' AS first, raw->>'LastName' AS last, reason FROM pmsync.quarantine WHERE source = 'bytes' ORDER BY record_id",
    );
    expect(q.rows.map((r) => r.record_id)).toEqual(['cust-00003', 'cust-00121']);
    expect(q.rows[0]).toMatchObject({ first: 'Ann\\u0000e 2', last: '\\ud800 2' });
    expect(q.rows[0]!.reason).toMatch(/NUL character or an unpaired UTF-16 surrogate\) in FirstName, LastName/);

    // The next run is an ordinary incremental one: nothing is stuck.
    server.set({ kind: 'bad-text', at: [2, 120] }, 150);
    const again = await sync([source('bytes')]);
    expect(again.code).toBe(0);
    expect(server.count('/customers')).toBe(2);
    expect(await rows('bytes')).toBe(148);
  });
});

describe('paging headers that cannot be trusted', () => {
  it('DataTotalPages far beyond DataTotalRows stops after page 1 with a clear error; nothing lands, no window is left', async () => {
    server.set({ kind: 'huge-total-pages', totalPages: '1000000000' }, 250);
    const res = await sync([source('total-pages')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(
      /total-pages\/customers: failed: page 1 says DataTotalPages=1000000000, but its DataTotalRows=250 at the 100 rows page 1 holds make 3 page\(s\)\. The server's paging cannot be trusted/,
    );
    expect(server.count('/customers')).toBe(1);
    expect(await rows('total-pages')).toBe(0);
    expect(await checkpoint('total-pages')).toBeUndefined();

    const status = await runCli(
      ['--config', writeConfig({ sources: [source('total-pages')] }), 'status'],
      cliEnv({ DATABASE_URL: db.url }),
    );
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/customers\s+0 rows\s+cursor - {2}last run failed/);
    expect(status.stdout).not.toMatch(/quota day\(s\)/);
  });

  it('a total that is not a safe integer is refused at once instead of rounding', async () => {
    server.set({ kind: 'unsafe-totals', value: '99999999999999999999' }, 250);
    const res = await sync([source('unsafe')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(
      /unsafe\/customers: failed: the DataTotalRows header is "99999999999999999999", not a whole number of at most 9007199254740991/,
    );
    expect(server.count('/customers')).toBe(1);
    expect(await rows('unsafe')).toBe(0);
  });

  it('an empty page met while reading down, that its own DataTotalRows says holds rows, stops the window', async () => {
    server.set({ kind: 'empty-pages' }, 250);
    const res = await sync([source('empty')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(/page 3 came back empty although its DataTotalRows=250 at 100 rows a page puts 50 rows on it/);
    expect(server.requests.map((r) => r.page)).toEqual([1, 3]);
    expect(await rows('empty')).toBe(100);
    expect((await checkpoint('empty'))?.window?.nextPage).toBe(3);
  });
});

describe('a server that ignores Page', () => {
  it('without Data* headers: the repeated page is recognised, the run stops, and a resumed run spends one request', async () => {
    server.set({ kind: 'ignores-page' }, 250);
    const res = await sync([source('no-paging')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(
      /no-paging\/customers: failed: page 2 came back with exactly the records of page 1: the server ignores Page for this list/,
    );
    expect(server.requests.map((r) => r.page)).toEqual([1, 2]);
    expect(await rows('no-paging')).toBe(100);
    const state = await checkpoint('no-paging');
    expect(state?.cursor).toBeNull();
    expect(state?.window?.nextPage).toBe(2);

    server.set({ kind: 'ignores-page' }, 250);
    const again = await sync([source('no-paging')]);
    expect(again.code).toBe(7);
    expect(again.stdout).toMatch(/page 2 came back with exactly the records of page 1/);
    expect(server.requests.map((r) => r.page)).toEqual([2]);
  });

  it('with Data* headers: the last page answering page 1 stops the window', async () => {
    server.set({ kind: 'ignores-page-with-headers' }, 250);
    const res = await sync([source('no-paging-headers')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(/page 3 came back with exactly the records of page 1: the server ignores Page/);
    expect(server.requests.map((r) => r.page)).toEqual([1, 3]);
    expect(await rows('no-paging-headers')).toBe(100);
  });
});

describe('response bodies', () => {
  it('a body past maxResponseBytes is cut off, reported and not retried', async () => {
    server.set({ kind: 'huge-body', bytes: 4 * 1024 * 1024 });
    const res = await sync([source('huge', { maxResponseBytes: 65_536 })]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(
      /huge\/customers: failed: source "huge": GET \S+ answered a body larger than 65536 bytes \(maxResponseBytes\)/,
    );
    expect(server.count('/customers')).toBe(1);
    expect(await rows('huge')).toBe(0);
  });

  it('a declared Content-Length past the limit is refused before the body is read', async () => {
    server.set({ kind: 'huge-body', bytes: 600 * 1024 * 1024, declare: true });
    const res = await sync([source('huge-declared')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(/answered a body larger than 16777216 bytes \(maxResponseBytes\)/);
    expect(server.count('/customers')).toBe(1);
  });

  it('an error body is redacted before it is cut: a key straddling the cut does not leak even in part', async () => {
    server.set({ kind: 'error', status: 500, body: `${'x'.repeat(295)}${APIKEY} and more` });
    const res = await sync([source('leaky')]);
    expect(res.code).toBe(7);
    expect(res.stdout).toMatch(/leaky\/customers: failed: source "leaky": GET \S+ failed with 500: x{295}\[RED/);
    expect(server.count('/customers')).toBe(2);
    const stored = await db.pool.query<{ error_message: string }>("SELECT error_message FROM pmsync.runs WHERE source = 'leaky'");
    for (const text of [res.stdout, res.stderr, ...stored.rows.map((r) => r.error_message)]) expect(text).not.toContain(APIKEY.slice(0, 5));
  });
});

describe('a database lost mid-run', () => {
  it('exits 6 naming the database, after the pages committed before it; later sources are not tried', async () => {
    const admin = new URL(db.url);
    const proxy = await startTcpProxy(admin.hostname, Number(admin.port || 5432));
    server.set({ kind: 'ok' }, 250);
    server.beforeAnswer = async (r) => {
      if (r.page === 3) await proxy.cut();
    };
    try {
      // Two accounts (one account read twice is refused at start-up), on the same server.
      const res = await sync([source('lost-a'), source('lost-b', { apikey: `${APIKEY}-b` })], proxy.url(db.url));
      expect(res.code).toBe(6);
      expect(res.stdout).toMatch(
        new RegExp(`lost-a: stopped: Lost the connection to PostgreSQL at postgres://127\\.0\\.0\\.1:${proxy.port}/`),
      );
      expect(res.stdout).not.toMatch(/lost-b/);
      expect(server.requests.map((r) => r.page)).toEqual([1, 3]);
    } finally {
      server.beforeAnswer = () => undefined;
    }
    expect(await rows('lost-a')).toBe(100);
    expect((await checkpoint('lost-a'))?.window?.nextPage).toBe(3);
  });
});

describe('status --check', () => {
  it('exits with the failure a sync would have, so it works as a pre-flight check', async () => {
    server.set({ kind: 'error', status: 401, body: '' });
    const res = await runCli(
      ['--config', writeConfig({ sources: [source('preflight')] }), 'status', '--check'],
      cliEnv({ DATABASE_URL: db.url }),
    );
    expect(res.code).toBe(4);
    expect(res.stdout).toMatch(/connectivity FAILED: source "preflight": GET \S+\/status\?\S* was refused \(401 Unauthorized\)/);
    server.set({ kind: 'ok' });
    const ok = await runCli(
      ['--config', writeConfig({ sources: [source('preflight')] }), 'status', '--check'],
      cliEnv({ DATABASE_URL: db.url }),
    );
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/connectivity ok/);
  });
});
