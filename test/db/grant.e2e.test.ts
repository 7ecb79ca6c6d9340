/**
 * `pmsync grant`: read access that PostgreSQL itself enforces. Two practices
 * are synced into one database (history on); two real login roles, each
 * granted one practice, connect on their own and count the other's rows in
 * every resource table, history table and view: none. Neither can read
 * pmsync.*. The CLI runs as a real process.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reapplyGrants } from '../../src/app.ts';
import { ANALYST_VIEWS, existingRelations, policyName } from '../../src/db/access.ts';
import { allResourceTables } from '../../src/sync/streams/index.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const A = { apikey: 'grant-key-A1', username: 'a.user', password: 'a-pass-G1', variant: 'core' as const };
const B = { apikey: 'grant-key-B2', username: 'b.user', password: 'b-pass-G2', variant: 'core' as const };
const SIZES = { customers: 120, appointments: 80, orders: 40, companies: 2 };
const suffix = randomBytes(4).toString('hex');
const ROLE_A = `pmsync_t_reader_a_${suffix}`;
const ROLE_B = `pmsync_t_reader_b_${suffix}`;
const PASSWORD = `pw-${suffix}`;

const clock = new TestClock('2026-05-04T10:00:00Z');
let sim: Simulator;
let db: TestDatabase;
let file: string;

const cli = (...args: string[]) =>
  runCli([...args, '--config', file], cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() }));

async function asRole<T>(role: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const url = new URL(db.url);
  url.username = role;
  url.password = PASSWORD;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  sim = await startSimulator({
    seed: 4,
    now: clock.now,
    tenants: [
      { ...A, sizes: SIZES },
      { ...B, sizes: SIZES },
    ],
  });
  db = await createTestDatabase({ migrate: false });
  const history = ['customers', 'appointments', 'orders', 'companies'];
  file = writeConfig({
    sources: [
      coreEntry(sim, 'practice_a', A, { streams: ['customers', 'appointments', 'orders', 'companies'], history }),
      coreEntry(sim, 'practice_b', B, { streams: ['customers', 'appointments', 'orders', 'companies'], history }),
    ],
  });
  const synced = await cli('sync');
  expect(synced.code, synced.stdout + synced.stderr).toBe(0);
  // A second version of some rows, so the history tables hold both practices' past too.
  sim.tenant(A.apikey).touch('customers', 5);
  sim.tenant(B.apikey).touch('customers', 5);
  clock.advance(3_600_000);
  expect((await cli('sync')).code).toBe(0);
  // Login roles an operator would have made; pmsync grants them access.
  await admin(`CREATE ROLE ${ROLE_A} LOGIN PASSWORD '${PASSWORD}'`);
  await admin(`CREATE ROLE ${ROLE_B} LOGIN PASSWORD '${PASSWORD}'`);
}, 300_000);

afterAll(async () => {
  await sim?.close();
  await db?.drop();
  for (const role of [ROLE_A, ROLE_B]) await admin(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
});

/** Rows of `source` each relation shows to the role; relations it may not read are listed as refused. */
async function visible(role: string, source: string): Promise<{ counts: Record<string, number>; refused: string[] }> {
  const relations = await existingRelations(db.pool, allResourceTables());
  const counts: Record<string, number> = {};
  const refused: string[] = [];
  await asRole(role, async (c) => {
    for (const t of relations.tables) {
      try {
        counts[t] = (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM public."${t}" WHERE source = $1`, [source])).rows[0]!.n;
      } catch {
        refused.push(t);
      }
    }
    for (const v of relations.views) {
      try {
        counts[v] = (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM public."${v}" WHERE source = $1`, [source])).rows[0]!.n;
      } catch {
        refused.push(v);
      }
    }
  });
  return { counts, refused };
}

describe('pmsync grant', () => {
  it('finds every resource table, its history table and the views', async () => {
    const relations = await existingRelations(db.pool, allResourceTables());
    const history = await db.pool.query<{ tablename: string }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE '%\\_history' ORDER BY tablename`,
    );
    expect(history.rows.length).toBeGreaterThan(10);
    expect([...relations.tables].sort()).toEqual([...allResourceTables(), ...history.rows.map((r) => r.tablename)].sort());
    expect(relations.views).toEqual([...ANALYST_VIEWS]);
  });

  it('gives each role only its practice: 0 rows of the other in every table, history table and view', async () => {
    const a = await cli('grant', '--role', ROLE_A, '--source', 'practice_a');
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(a.stdout).toMatch(new RegExp(`role ${ROLE_A}: SELECT on \\d+ tables and 3 views, rows of practice_a only`));
    expect((await cli('grant', '--role', ROLE_B, '--source', 'practice_b')).code).toBe(0);

    for (const [role, own, other] of [
      [ROLE_A, 'practice_a', 'practice_b'],
      [ROLE_B, 'practice_b', 'practice_a'],
    ] as const) {
      const theirs = await visible(role, other);
      expect(theirs.refused, role).toEqual([]);
      expect(
        Object.entries(theirs.counts).filter(([, n]) => n > 0),
        `${role} sees ${other}`,
      ).toEqual([]);
      const mine = await visible(role, own);
      for (const t of ['customers', 'customers_history', 'appointments', 'orders', 'companies', 'customer_overview']) {
        expect(mine.counts[t], `${role} ${t}`).toBeGreaterThan(0);
      }
    }
    // pmsync's own connection (the owner) still reads and writes everything.
    const all = await db.pool.query<{ n: number }>(`SELECT count(DISTINCT source)::int AS n FROM customers`);
    expect(all.rows[0]!.n).toBe(2);
  });

  it('refuses every pmsync.* table to a granted role', async () => {
    const tables = await db.pool.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = 'pmsync'`);
    expect(tables.rows.length).toBeGreaterThan(5);
    await asRole(ROLE_A, async (c) => {
      for (const { tablename } of tables.rows) {
        await expect(c.query(`SELECT 1 FROM pmsync."${tablename}" LIMIT 1`), tablename).rejects.toThrow(/permission denied/);
      }
    });
  });

  it("is idempotent, changes a role's sources in place, and a sync still writes past the policies", async () => {
    expect((await cli('grant', '--role', ROLE_A, '--source', 'practice_a')).code).toBe(0);
    const widened = await cli('grant', '--role', ROLE_A, '--source', 'practice_a', 'practice_b');
    expect(widened.code, widened.stderr).toBe(0);
    expect((await visible(ROLE_A, 'practice_b')).counts.customers).toBeGreaterThan(0);
    expect((await cli('grant', '--role', ROLE_A, '--source', 'practice_a')).code).toBe(0);
    expect((await visible(ROLE_A, 'practice_b')).counts.customers).toBe(0);

    sim.tenant(B.apikey).create('customers');
    clock.advance(3_600_000);
    expect((await cli('sync')).code).toBe(0);
    expect((await visible(ROLE_B, 'practice_b')).counts.customers).toBe(SIZES.customers + 1);
  });

  it('re-applies every grant after a migration, so a table it adds is covered at once', async () => {
    // As a table a new migration created: no privileges, no policy for the granted roles yet.
    await db.pool.query(`DROP POLICY ${policyName(ROLE_B)} ON public.orders; REVOKE SELECT ON public.orders FROM ${ROLE_B}`);
    expect((await visible(ROLE_B, 'practice_b')).refused).toEqual(['orders']);
    expect(await reapplyGrants(db.pool)).toBe(2);
    const after = await visible(ROLE_B, 'practice_b');
    expect(after.refused).toEqual([]);
    expect(after.counts.orders).toBe(SIZES.orders);
    expect((await visible(ROLE_B, 'practice_a')).counts.orders).toBe(0);
  });

  it('refuses unknown sources and bad role names with exit 2, and --revoke takes the access back', async () => {
    const unknown = await cli('grant', '--role', ROLE_A, '--source', 'nosuch');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--source "nosuch": no such source .*known: practice_a, practice_b/);
    const bad = await cli('grant', '--role', 'pg_monitor');
    expect(bad.code).toBe(2);

    const revoked = await cli('grant', '--role', ROLE_A, '--revoke');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await visible(ROLE_A, 'practice_a')).refused).toContain('customers');
    // The operator made the role: pmsync leaves it in place.
    const left = await db.pool.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [ROLE_A]);
    expect(left.rowCount).toBe(1);
  });
});
