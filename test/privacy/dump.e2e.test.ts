/**
 * The proof that a dropped or hashed value is stored nowhere: the CLI syncs
 * the Core and Pro simulators with column policies on into one database and
 * with none into another (history on, a record set aside, records changed
 * between runs, one refreshed by id), then each whole database is dumped
 * (`pg_dump --data-only`, the pmsync schema included) and searched for every
 * original value of every dropped or hashed field, taken from the
 * simulator's own records. The dump with policies finds none of them (nor
 * the hash key, nor any of them in the logs); the dump without finds every
 * one, so the search cannot pass for not looking.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type CoreRecord, type Simulator } from '../../simulator/index.ts';
import { hmacHex } from '../../src/privacy/rules.ts';
import { cliEnv, runCli, writeConfig, type CliResult } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { TestClock } from '../support/harness.ts';

const run = promisify(execFile);

const KEY = 'proof-key-7Hq2-4dWx-9mZr-Lk3P-0aVt-6sNe';
const TENANT = {
  apikey: 'privacy-key-Tq4',
  username: 'privacy.user',
  password: 'privacy-pass-Rn8',
  variant: 'core' as const,
  sizes: {
    customers: 120,
    companies: 2,
    appointments: 40,
    orders: 30,
    memberships: 15,
    membershipprograms: 3,
    giftcertificates: 10,
    products: 6,
    services: 5,
    employees: 8,
  },
};
const PRACTICE = {
  token: 'privacy-pro-token-Zc5',
  practiceId: 611,
  sizes: { patients: 40, appointmentsPerPatient: 1, eventTypes: 3, providers: 2, waitlist: 8, waitlistSlots: 8 },
};

let sim: Simulator;
let on: TestDatabase;
let off: TestDatabase;
const clock = new TestClock('2026-05-04T09:00:00.000Z');
/** Every CLI output of the policies-on runs: logs are searched too. */
const logsOn: CliResult[] = [];

function config(policies: boolean): string {
  const core = {
    name: 'clinic',
    kind: 'core',
    baseUrl: sim.coreBaseUrl(),
    apikey: TENANT.apikey,
    username: TENANT.username,
    password: TENANT.password,
    lagSeconds: 0,
    history: ['customers', 'employees'],
  };
  const pro = {
    name: 'practice',
    kind: 'pro',
    baseUrl: sim.proBaseUrl(),
    practiceId: PRACTICE.practiceId,
    token: PRACTICE.token,
    // Availability captures carry the providers' names, which are not patients' data: not read here.
    streams: ['patients', 'event-types', 'appointments', 'waitlist-slots', 'waitlist'],
    waitlistIds: sim
      .practice(PRACTICE.practiceId)
      .list('waitlist')
      .map((w) => w.waitlistId),
    history: ['pro_patients', 'pro_waitlist_entries'],
  };
  if (!policies) return writeConfig({ sources: [core, pro] });
  return writeConfig({
    privacy: {
      key: { env: 'PMSYNC_HASH_KEY' },
      columns: {
        personal: 'hash',
        'customers.mobile_phone': 'drop',
        'customers.birthday': 'year',
        'pro_patients.cell_phone': 'drop',
        'pro_patients.dob': 'year',
        'pro_waitlist_entries.comments': 'drop',
      },
      raw: 'declared',
    },
    sources: [core, pro],
  });
}

async function sync(policies: boolean, args: string[] = ['sync']): Promise<CliResult> {
  const db = policies ? on : off;
  const env = cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), LOG_LEVEL: 'debug', PMSYNC_HASH_KEY: KEY });
  const res = await runCli(['--config', config(policies), ...args], env);
  if (policies) logsOn.push(res);
  expect(res.code, res.stderr.slice(-2000)).toBe(0);
  return res;
}

/** The database's data, dumped by a pg_dump no older than the server (pg_dump refuses a newer server) when there is one. */
async function pgDump(db: TestDatabase): Promise<string> {
  const version = Number((await db.pool.query<{ v: string }>('SHOW server_version_num')).rows[0]!.v);
  const major = Math.floor(version / 10_000);
  const candidates = [process.env.PG_DUMP, `/usr/lib/postgresql/${major}/bin/pg_dump`, 'pg_dump'].filter((c): c is string => !!c);
  for (const bin of candidates) {
    if (bin.includes('/') && !existsSync(bin)) continue;
    try {
      const { stdout } = await run(bin, ['--data-only', '--no-owner', db.url], { maxBuffer: 512 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      if (/server version mismatch/.test(String((err as { stderr?: string }).stderr ?? err))) continue;
      throw err;
    }
  }
  // No pg_dump of the server's major here (the embedded server is newer than the distribution's client): the same
  // data-only dump, every row of every table of every schema but the system ones, as JSON text, through the driver
  // (the search below finds short values as JSON strings; with policies off it finds every one, as with pg_dump).
  return copyDump(db);
}

async function copyDump(db: TestDatabase): Promise<string> {
  const tables = await db.pool.query<{ s: string; t: string }>(
    `SELECT n.nspname AS s, c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
     ORDER BY 1, 2`,
  );
  expect(tables.rows.length).toBeGreaterThan(20);
  const parts: string[] = [];
  for (const { s, t } of tables.rows) {
    const ident = `"${s.replace(/"/g, '""')}"."${t.replace(/"/g, '""')}"`;
    const rows = await db.pool.query<{ line: string }>(`SELECT row_to_json(x)::text AS line FROM ${ident} x`);
    // Sections as pg_dump writes them, so the searches by table read either.
    parts.push(`COPY ${s}.${t} (json) FROM stdin;`, ...rows.rows.map((r) => r.line), '\\.');
  }
  return parts.join('\n') + '\n';
}

/** How often a value appears: as a JSON string or a whole COPY field for short values, anywhere for longer ones. */
function hits(text: string, value: string): number {
  const count = (needle: string) => text.split(needle).length - 1;
  if (value.length >= 6) return count(value);
  return count(JSON.stringify(value)) + count(`\t${value}\t`) + count(`\t${value}\n`);
}

/** The rows of one table in a dump (between its COPY line and the closing `\.`). */
function section(dump: string, table: string): string {
  const start = dump.indexOf(`COPY ${table} (`);
  if (start < 0) return '';
  return dump.slice(start, dump.indexOf('\n\\.\n', start));
}

interface Secret {
  where: string;
  value: string;
}

/** Every value of the fields the policies drop or hash, as the simulator holds them now. */
function secretsNow(): Secret[] {
  const tenant = sim.tenant(TENANT.apikey);
  const practice = sim.practice(PRACTICE.practiceId);
  const out: Secret[] = [];
  const add = (where: string, v: unknown) => {
    if (typeof v === 'string' && v.trim().length >= 2) out.push({ where, value: v });
  };
  for (const c of tenant.list('customers')) for (const f of ['FirstName', 'LastName', 'Email', 'MobilePhone']) add(`customers.${f}`, c[f]);
  for (const e of tenant.list('employees')) for (const f of ['FirstName', 'LastName', 'Email']) add(`employees.${f}`, e[f]);
  for (const p of practice.list('patients')) {
    add('patients.firstName', p.firstName);
    add('patients.lastName', p.lastName);
    add('patients.cellPhone', p.cellPhone);
  }
  for (const w of practice.list('waitlist')) add('waitlist.comments', w.comments);
  return out;
}

const secrets = new Map<string, Secret>();
const remember = () => {
  for (const s of secretsNow()) secrets.set(`${s.where}\0${s.value}`, s);
};
let invalid: CoreRecord;
let dumpOn: string;
let dumpOff: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 20, now: clock.now, tenants: [TENANT], practices: [PRACTICE] });
  [on, off] = await Promise.all([createTestDatabase({ migrate: false }), createTestDatabase({ migrate: false })]);

  await sync(false);
  await sync(true);
  remember();
  // Between runs: names, emails and phones change (the old values stay in history), one customer turns invalid.
  const tenant = sim.tenant(TENANT.apikey);
  const practice = sim.practice(PRACTICE.practiceId);
  for (const c of tenant.list('customers').slice(0, 5))
    tenant.update('customers', String(c.CustomerId), {
      Email: `moved.${String(c.CustomerId).slice(-6)}@example.org`,
      LastName: 'Okonkwo-Marsh',
    });
  for (const p of practice.list('patients').slice(0, 3))
    practice.update('patients', p.patientId, { firstName: 'Bartholomew', cellPhone: '(303) 555-7788' });
  invalid = tenant.update('customers', String(tenant.list('customers')[10]!.CustomerId), {
    IsActive: 'yes',
    Email: 'set.aside@example.net',
  });
  const refreshed = tenant.list('customers')[20]!;
  tenant.update('customers', String(refreshed.CustomerId), { Email: 'refreshed.by.id@example.com' });
  remember();
  clock.advance(2_000);
  await sync(false);
  await sync(true);
  await sync(false, ['resync', 'customers', '--source', 'clinic', '--id', String(refreshed.CustomerId)]);
  await sync(true, ['resync', 'customers', '--source', 'clinic', '--id', String(refreshed.CustomerId)]);
  [dumpOn, dumpOff] = await Promise.all([pgDump(on), pgDump(off)]);
});

afterAll(async () => {
  await sim?.close();
  await on?.drop();
  await off?.drop();
});

describe('a whole-database dump with column policies on', () => {
  it('holds no original value of a dropped or hashed field, in any table, history or pmsync.*, nor in the logs', () => {
    const all = [...secrets.values()];
    expect(all.length).toBeGreaterThan(400);
    const logs = logsOn.map((r) => `${r.stdout}\n${r.stderr}`).join('\n');
    const found = all.filter((s) => hits(dumpOn, s.value) > 0 || hits(logs, s.value) > 0);
    expect(found.map((s) => `${s.where}: ${s.value}`)).toEqual([]);
    expect(dumpOn.includes(KEY) || logs.includes(KEY)).toBe(false);
  });

  it('while the same search finds every one of them in the dump without policies', () => {
    const missing = [...secrets.values()].filter((s) => hits(dumpOff, s.value) === 0);
    expect(missing.map((s) => `${s.where}: ${s.value}`)).toEqual([]);
    expect(dumpOff).toContain(invalid.Email as string);
  });

  it('keeps birth dates to their year in the tables, history and quarantine', () => {
    const tenant = sim.tenant(TENANT.apikey);
    const practice = sim.practice(PRACTICE.practiceId);
    const where = (dump: string, tables: string[]) => tables.map((t) => section(dump, t)).join('\n');
    const core = ['public.customers', 'public.customers_history', 'pmsync.quarantine'];
    const pro = ['public.pro_patients', 'public.pro_patients_history'];
    const births = [
      ...tenant.list('customers').map((c) => ({ tables: core, value: c.Birthday as string | null })),
      ...practice.list('patients').map((p) => ({ tables: pro, value: p.dob })),
    ].filter((b): b is { tables: string[]; value: string } => typeof b.value === 'string' && !b.value.endsWith('-01-01'));
    expect(births.length).toBeGreaterThan(100);
    expect(births.filter((b) => where(dumpOn, b.tables).includes(b.value)).map((b) => b.value)).toEqual([]);
    expect(births.filter((b) => !where(dumpOff, b.tables).includes(b.value)).map((b) => b.value)).toEqual([]);
  });

  it('stores every record, with hashes that join: the same email hashes the same as the key computes it', async () => {
    const tenant = sim.tenant(TENANT.apikey);
    const counts = await on.pool.query<{ n: number; q: number; versions: number }>(
      `SELECT (SELECT count(*)::int FROM customers WHERE source = 'clinic') AS n,
              (SELECT count(*)::int FROM pmsync.quarantine WHERE source = 'clinic' AND resource = 'customers') AS q,
              (SELECT count(*)::int FROM customers_history WHERE source = 'clinic') AS versions`,
    );
    expect(counts.rows[0]).toEqual({ n: tenant.count('customers'), q: 1, versions: tenant.count('customers') + 5 + 1 });
    const sample = tenant.list('customers')[30]!;
    const row = await on.pool.query<{ email: string; mobile_phone: string | null; birthday: string | null; raw: Record<string, unknown> }>(
      `SELECT email, mobile_phone, birthday::text AS birthday, raw FROM customers WHERE source = 'clinic' AND id = $1`,
      [sample.CustomerId],
    );
    expect(row.rows[0]).toMatchObject({
      email: hmacHex(KEY, String(sample.Email).trim().toLowerCase()),
      mobile_phone: null,
      birthday: sample.Birthday === null ? null : `${String(sample.Birthday).slice(0, 4)}-01-01`,
    });
    expect(Object.keys(row.rows[0]!.raw)).not.toContain('MobilePhone');
    const stored = await on.pool.query(
      `SELECT policy, key_fingerprint FROM pmsync.privacy_policies WHERE source = 'clinic' AND table_name = 'customers'`,
    );
    expect(stored.rows[0].key_fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });
});
