/**
 * The pmsync_freshness view: per source and table, how current the table is
 * (the end of the last completed window), the stream's target as the
 * configuration says, announced changes not read yet, rows marked not seen
 * and the last successful run. Two practices are synced by the real CLI; a
 * role granted one of them reads the view and sees that practice only.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamTables } from '../../scripts/stream-tables.ts';
import { insertEvent } from '../../src/state/webhook-events.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const A = { apikey: 'fresh-key-A1', username: 'a.user', password: 'a-pass-F1', variant: 'core' as const };
const B = { apikey: 'fresh-key-B2', username: 'b.user', password: 'b-pass-F2', variant: 'core' as const };
const SIZES = { customers: 30, companies: 3 };
const suffix = randomBytes(4).toString('hex');
const ROLE_A = `pmsync_t_fresh_a_${suffix}`;
const PASSWORD = `pw-${suffix}`;

const clock = new TestClock('2026-05-04T10:00:00Z');
let sim: Simulator;
let db: TestDatabase;
let file: string;

const cli = (...args: string[]) =>
  runCli([...args, '--config', file], cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() }));

interface Row {
  source: string;
  table_name: string;
  resource: string;
  fresh_as_of: Date | null;
  read_as: string;
  schedule: string;
  target_minutes: number | null;
  floor_minutes: number | null;
  within_target: boolean | null;
  changes_waiting: number;
  rows_not_seen: number | null;
  last_success_at: Date | null;
}

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
    seed: 7,
    now: clock.now,
    tenants: [
      { ...A, sizes: SIZES },
      { ...B, sizes: SIZES },
    ],
  });
  db = await createTestDatabase({ migrate: false });
  file = writeConfig({
    schedules: {
      maxStalenessMinutes: 30,
      overrides: [{ source: 'practice_b', resource: 'companies', maxStalenessMinutes: 90 }],
    },
    sources: [
      coreEntry(sim, 'practice_a', A, { streams: ['companies', 'customers'] }),
      coreEntry(sim, 'practice_b', B, { streams: ['companies', 'customers'] }),
    ],
  });
  const first = await cli('sync');
  expect(first.code, first.stdout + first.stderr).toBe(0);
  // A company the API stops returning: the next full pass of companies marks it not seen.
  const gone = sim.tenant(A.apikey).list('companies')[0]!;
  sim.tenant(A.apikey).remove('companies', String(gone.CompanyId));
  clock.advance(3_600_000);
  const second = await cli('sync');
  expect(second.code, second.stdout + second.stderr).toBe(0);
  await admin(`CREATE ROLE ${ROLE_A} LOGIN PASSWORD '${PASSWORD}'`);
}, 300_000);

afterAll(async () => {
  await sim?.close();
  await db?.drop();
  await admin(`DROP ROLE IF EXISTS ${ROLE_A}`).catch(() => undefined);
});

const rowsOf = async (q: pg.Client | TestDatabase['pool']) =>
  (await q.query<Row>('SELECT * FROM public.pmsync_freshness ORDER BY source, table_name')).rows;

describe('pmsync_freshness', () => {
  it('says per source and table how current it is, its target, what waits and what is marked not seen', async () => {
    // A change a webhook announced after the last check: known, not read yet.
    await insertEvent(db.pool, {
      source: 'practice_a',
      delivery: {
        EventId: 'evt-1',
        EventType: 'Patient.Updated',
        TenantId: 't',
        Application: 'app',
        EventTimestamp: clock.iso(),
        Url: '/customers/1',
      },
      resource: 'customers',
      recordId: '1',
      outcome: 'notified',
      reason: null,
      receivedAt: new Date(clock.now().getTime() + 60_000),
    });
    const rows = await rowsOf(db.pool);
    expect(rows.map((r) => `${r.source}/${r.table_name}/${r.resource}`)).toEqual([
      'practice_a/companies/companies',
      'practice_a/customers/customers',
      'practice_b/companies/companies',
      'practice_b/customers/customers',
    ]);
    const state = await db.pool.query<{ source: string; resource: string; cursor: Date }>(
      'SELECT source, resource, cursor FROM pmsync.sync_state',
    );
    for (const s of state.rows) {
      const row = rows.find((r) => r.source === s.source && r.resource === s.resource)!;
      expect(row.fresh_as_of, `${s.source}/${s.resource}`).toEqual(s.cursor);
    }
    const [aCompanies, aCustomers, bCompanies, bCustomers] = rows as [Row, Row, Row, Row];
    // The second sync's windows end at its start (the test clock, an hour after the first).
    expect(aCustomers.fresh_as_of!.getTime()).toBeGreaterThan(Date.parse('2026-05-04T10:30:00Z'));
    expect(aCustomers).toMatchObject({ read_as: 'incremental', schedule: 'budget', target_minutes: 30, floor_minutes: 1440 });
    expect(aCompanies.read_as).toBe('full');
    expect(bCompanies.target_minutes).toBe(90);
    expect(bCustomers.target_minutes).toBe(30);
    // The database clock is months past the test clock: nothing is within its target.
    expect(aCustomers.within_target).toBe(false);
    expect(aCustomers.changes_waiting).toBe(1);
    expect(bCustomers.changes_waiting).toBe(0);
    expect(aCompanies.rows_not_seen).toBe(1);
    expect(bCompanies.rows_not_seen).toBe(0);
    const last = await db.pool.query<{ at: Date }>(
      `SELECT max(ended_at) AS at FROM pmsync.runs WHERE source = 'practice_a' AND resource = 'customers' AND status = 'succeeded'`,
    );
    expect(aCustomers.last_success_at).toEqual(last.rows[0]!.at);
  });

  it('counts the rows marked not seen of every resource table (a new stream table needs the view extended)', async () => {
    const def = await db.pool.query<{ def: string }>(`SELECT pg_get_viewdef('public.pmsync_freshness'::regclass) AS def`);
    for (const t of streamTables()) expect(def.rows[0]!.def, t.name).toContain(`'${t.name}'::text AS table_name`);
  });

  it('can count them from partial indexes of the marked rows only, so polling it stays cheap as tables grow', async () => {
    const client = await db.pool.connect();
    try {
      // Small test tables make a sequential scan the cheapest plan: forbid it to see which indexes serve the view.
      await client.query('SET enable_seqscan = off');
      const plan = (await client.query<{ 'QUERY PLAN': string }>('EXPLAIN SELECT * FROM public.pmsync_freshness')).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      for (const t of streamTables()) expect(plan, t.name).toContain(`${t.name}_not_seen_idx`);
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });

  it('shows a granted role only its practice, and nothing to a role without a grant', async () => {
    await admin(`GRANT USAGE ON SCHEMA public TO ${ROLE_A}`);
    await expect(asRole(ROLE_A, (c) => rowsOf(c))).rejects.toThrow(/permission denied/);
    const granted = await cli('grant', '--role', ROLE_A, '--source', 'practice_a');
    expect(granted.code, granted.stdout + granted.stderr).toBe(0);
    const seen = await asRole(ROLE_A, (c) => rowsOf(c));
    expect(seen.map((r) => r.source)).toEqual(['practice_a', 'practice_a']);
    expect(seen.find((r) => r.table_name === 'companies')!.rows_not_seen).toBe(1);
    // The role still reads none of pmsync's bookkeeping itself.
    await asRole(ROLE_A, async (c) => {
      await expect(c.query('SELECT 1 FROM pmsync.sync_state')).rejects.toThrow(/permission denied/);
    });
    const revoked = await cli('grant', '--role', ROLE_A, '--revoke');
    expect(revoked.code, revoked.stderr).toBe(0);
    await expect(asRole(ROLE_A, (c) => rowsOf(c))).rejects.toThrow(/permission denied/);
  });

  it('follows the configuration: a stream no longer listed keeps its row, without a table or a target', async () => {
    file = writeConfig({
      sources: [coreEntry(sim, 'practice_a', A, { streams: ['customers'] }), coreEntry(sim, 'practice_b', B, { streams: ['customers'] })],
    });
    clock.advance(3_600_000);
    expect((await cli('sync')).code).toBe(0);
    const targets = await db.pool.query<{ key: string; target: number | null }>(
      `SELECT source || '/' || resource AS key, target_minutes AS target FROM pmsync.stream_targets ORDER BY 1`,
    );
    expect(targets.rows).toEqual([
      { key: 'practice_a/customers', target: null },
      { key: 'practice_b/customers', target: null },
    ]);
    // Its state stays: the view still says how current the table was, without a target.
    const companies = (await rowsOf(db.pool)).filter((r) => r.resource === 'companies');
    expect(companies.map((r) => [r.source, r.table_name, r.target_minutes])).toEqual([
      ['practice_a', null, null],
      ['practice_b', null, null],
    ]);
  });
});
