/**
 * Names that are not ASCII (accents, apostrophes, hyphens, CJK, emoji beyond
 * the Basic Multilingual Plane, a ZWJ sequence) travel from the simulator
 * through the CLI's sync into PostgreSQL unchanged: typed columns and raw
 * hold exactly the strings the API served, character for character.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';

const TENANT = { apikey: 'utf8-key-Jh2', username: 'utf8.user', password: 'utf8-pass-Rt6', variant: 'core' as const };
const PRACTICE = {
  token: 'utf8-pro-token-Ks9',
  practiceId: 88,
  sizes: { patients: 300, appointmentsPerPatient: 0, eventTypes: 12, providers: 2, waitlist: 0, waitlistSlots: 0 },
};
const SIZES = {
  customers: 800,
  companies: 11,
  membershipprograms: 10,
  products: 14,
  services: 15,
  employees: 60,
  appointments: 0,
  orders: 0,
  memberships: 0,
  giftcertificates: 0,
};

const KINDS: Record<string, RegExp> = {
  accent: /[\u00C0-\u024F\u1E00-\u1EFF]/u,
  apostrophe: /'/,
  hyphen: /-/,
  cjk: /[\p{Script=Han}\p{Script=Hangul}\p{Script=Hiragana}\p{Script=Katakana}]/u,
  emoji: /\p{Extended_Pictographic}/u,
  'emoji beyond the BMP': /[\u{1F000}-\u{1FAFF}]/u,
  'ZWJ sequence': /\u200D/,
};

let sim: Simulator;
let db: TestDatabase;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, tenants: [{ ...TENANT, sizes: SIZES }], practices: [PRACTICE] });
  db = await createTestDatabase();
  const config = writeConfig({
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
        lagSeconds: 0,
      },
      {
        name: 'pro',
        kind: 'pro',
        baseUrl: sim.proBaseUrl(),
        practiceId: PRACTICE.practiceId,
        token: PRACTICE.token,
        streams: ['patients', 'event-types'],
      },
    ],
  });
  const res = await runCli(['--config', config, 'sync'], cliEnv({ DATABASE_URL: db.url }));
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

/** Each stored row's column, its raw field and its length in characters as PostgreSQL counts them, by id. */
async function stored(
  table: string,
  column: string,
  field: string,
  source: string,
): Promise<Map<string, { column: string; raw: string; length: number }>> {
  const res = await db.pool.query<{ id: string; column: string; raw: string; length: number }>(
    `SELECT id::text AS id, "${column}" AS column, raw->>'${field}' AS raw, length("${column}") AS length FROM "${table}" WHERE source = $1`,
    [source],
  );
  return new Map(res.rows.map((r) => [r.id, { column: r.column, raw: r.raw, length: r.length }]));
}

function expectSame(
  served: Array<{ id: string; value: string }>,
  rows: Map<string, { column: string; raw: string; length: number }>,
): void {
  expect(rows.size).toBe(served.length);
  for (const { id, value } of served) {
    expect(rows.get(id), id).toEqual({ column: value, raw: value, length: [...value].length });
  }
}

describe('UTF-8 from the API to the tables', () => {
  it('the simulator serves every kind of name the tables must hold', () => {
    const tenant = sim.tenant(TENANT.apikey);
    const names = [
      ...tenant.list('customers').flatMap((c) => [String(c.FirstName), String(c.LastName)]),
      ...tenant.list('companies').map((c) => String(c.CompanyName)),
      ...sim
        .practice(PRACTICE.practiceId)
        .list('eventTypes')
        .map((t) => t.name),
    ];
    for (const [kind, pattern] of Object.entries(KINDS))
      expect(
        names.some((n) => pattern.test(n)),
        kind,
      ).toBe(true);
  });

  it('Core typed columns and raw hold exactly the served strings', async () => {
    const tenant = sim.tenant(TENANT.apikey);
    const check = async (resource: Parameters<typeof tenant.list>[0], table: string, idField: string, pairs: Array<[string, string]>) => {
      for (const [column, field] of pairs) {
        const served = tenant.list(resource).map((r) => ({ id: String(r[idField]), value: String(r[field]) }));
        expectSame(served, await stored(table, column, field, 'clinic'));
      }
    };
    await check('customers', 'customers', 'CustomerId', [
      ['first_name', 'FirstName'],
      ['last_name', 'LastName'],
      ['email', 'Email'],
    ]);
    await check('companies', 'companies', 'CompanyId', [['company_name', 'CompanyName']]);
    await check('employees', 'employees', 'EmployeeId', [
      ['first_name', 'FirstName'],
      ['last_name', 'LastName'],
    ]);
    await check('products', 'products', 'ProductId', [['name', 'Name']]);
    await check('services', 'services', 'ServiceId', [['name', 'Name']]);
    await check('membershipprograms', 'membership_programs', 'MembershipProgramId', [['program_name', 'ProgramName']]);
  });

  it('Pro typed columns and raw hold exactly the served strings', async () => {
    const practice = sim.practice(PRACTICE.practiceId);
    for (const [column, field] of [
      ['first_name', 'firstName'],
      ['last_name', 'lastName'],
    ] as const) {
      expectSame(
        practice.list('patients').map((p) => ({ id: String(p.patientId), value: p[field] })),
        await stored('pro_patients', column, field, 'pro'),
      );
    }
    expectSame(
      practice.list('eventTypes').map((t) => ({ id: String(t.eventTypeId), value: t.name })),
      await stored('pro_event_types', 'name', 'name', 'pro'),
    );
  });

  it('SQL compares and searches them as text', async () => {
    const emoji = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM customers WHERE first_name LIKE '%🌸%' OR first_name LIKE '%🦁%' OR first_name LIKE '%👩‍⚕️%'`,
    );
    const served = sim
      .tenant(TENANT.apikey)
      .list('customers')
      .filter((c) => /\p{Extended_Pictographic}/u.test(String(c.FirstName))).length;
    expect(served).toBeGreaterThan(0);
    expect(emoji.rows[0]!.n).toBe(served);
    const apostrophes = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM customers WHERE last_name = 'O''Brien' OR last_name = 'D''Angelo'`,
    );
    expect(apostrophes.rows[0]!.n).toBe(
      sim
        .tenant(TENANT.apikey)
        .list('customers')
        .filter((c) => c.LastName === "O'Brien" || c.LastName === "D'Angelo").length,
    );
  });
});
