/**
 * The analyst views on hand-seeded rows: what each returns, and how they treat
 * duplicates, missing matches, inactive memberships and rows the API dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let test: TestDatabase;
/** The views compare with CURRENT_DATE and LOCALTIMESTAMP: the session zone is pinned so "today" is the UTC day used here. */
let db: { pool: Pool };

type Row = Record<string, unknown> & { source?: string; id: string };
async function seed(table: string, rows: Row[]): Promise<void> {
  for (const r of rows) {
    const row: Record<string, unknown> = { source: 'core', raw: {}, content_hash: r.id, fetched_at: new Date(), ...r };
    const cols = Object.keys(row);
    await db.pool.query(
      `INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`,
      cols.map((c) => (c === 'raw' ? JSON.stringify(row[c]) : row[c])),
    );
  }
}

const day = (offset: number) => {
  const d = new Date();
  d.setUTCDate(d.getUTCDate() + offset);
  return d.toISOString().slice(0, 10);
};

beforeAll(async () => {
  test = await createTestDatabase();
  db = { pool: createPool(`${test.url}?options=${encodeURIComponent('-c TimeZone=UTC')}`, 2) };

  await seed('companies', [
    { id: 'C1', company_name: 'Downtown' },
    { id: 'C2', company_name: 'Uptown' },
    { source: 'other', id: 'C1', company_name: 'Elsewhere' },
  ]);
  await seed('membership_programs', [
    { id: 'P-gold-1', company_id: 'C1', program_name: 'Gold', description: 'Gold at Downtown' },
    { id: 'P-gold-2', company_id: 'C2', program_name: 'Gold', description: 'Gold at Uptown' },
    { id: 'P-silver', company_id: 'C1', program_name: 'Silver ', description: 'Silver plan' },
    { id: 'P-bronze-a', company_id: 'C1', program_name: 'Bronze', description: 'first' },
    { id: 'P-bronze-b', company_id: 'C1', program_name: 'bronze', description: 'second' },
    { source: 'other', id: 'P-x', company_id: 'C1', program_name: 'Platinum', description: 'other source' },
  ]);
  await seed('customers', [
    { id: 'U1', company_id: 'C1', first_name: 'Ada', last_name: 'Lovelace', last_visit: day(-3) },
    { id: 'U2', company_id: 'C2', first_name: 'Bob', last_name: 'Builder', last_visit: null },
    { id: 'U3', company_id: 'C1', first_name: 'Gone', last_name: 'Customer', not_seen_since: new Date() },
  ]);
  await seed('memberships', [
    { id: 'M1', customer_id: 'U1', company_id: 'C1', membership_program: 'Gold', next_bill_date: day(10), bill_amount: 99 },
    { id: 'M2', customer_id: 'U2', company_id: 'C2', membership_program: 'gold', next_bill_date: day(-1) },
    { id: 'M3', customer_id: 'U2', company_id: 'C2', membership_program: 'Silver', next_bill_date: null },
    { id: 'M4', customer_id: 'U1', company_id: 'C1', membership_program: 'Bronze', next_bill_date: day(0) },
    { id: 'M5', customer_id: 'U1', company_id: 'C1', membership_program: 'Platinum', next_bill_date: day(30) },
    { id: 'M6', customer_id: 'U1', company_id: 'C1', membership_program: 'Gold', next_bill_date: day(5), not_seen_since: new Date() },
  ]);
  await seed('appointments', [
    { id: 'A1', company_id: 'C1', customer_id: 'U1', employee_id: 'E1', start_at: `${day(-3)}T09:00:00` },
    { id: 'A2', company_id: 'C1', customer_id: 'U1', employee_id: 'E2', start_at: `${day(-3)}T11:00:00` },
    { id: 'A3', company_id: 'C1', customer_id: 'U2', employee_id: 'E1', start_at: `${day(-3)}T15:00:00` },
    { id: 'A4', company_id: 'C2', customer_id: 'U2', employee_id: 'E3', start_at: `${day(-3)}T10:00:00` },
    { id: 'A5', company_id: 'C1', customer_id: 'U1', employee_id: 'E1', start_at: `${day(7)}T09:00:00` },
    { id: 'A6', company_id: 'C1', customer_id: 'U1', employee_id: 'E1', start_at: `${day(-3)}T16:00:00`, not_seen_since: new Date() },
    { id: 'A7', company_id: 'C9', customer_id: 'U1', employee_id: 'E1', start_at: `${day(-1)}T08:00:00` },
    { source: 'other', id: 'A1', company_id: 'C1', customer_id: 'U1', employee_id: 'E1', start_at: `${day(-3)}T09:00:00` },
  ]);
});
afterAll(async () => {
  await db.pool.end();
  await test.drop();
});

describe('membership_details', () => {
  it('matches each membership to its program by display name within the source, and says how', async () => {
    const { rows } = await db.pool.query(
      'SELECT membership_id, membership_program_id, program_name, program_description, program_match, program_candidates, is_active FROM membership_details ORDER BY membership_id',
    );
    expect(rows).toEqual([
      // Two programs are called Gold; the one of the membership's own company wins.
      {
        membership_id: 'M1',
        membership_program_id: 'P-gold-1',
        program_name: 'Gold',
        program_description: 'Gold at Downtown',
        program_match: 'same_company',
        program_candidates: 2,
        is_active: true,
      },
      {
        membership_id: 'M2',
        membership_program_id: 'P-gold-2',
        program_name: 'Gold',
        program_description: 'Gold at Uptown',
        program_match: 'same_company',
        program_candidates: 2,
        is_active: false,
      },
      // Case and surrounding spaces are ignored; a membership of another company still finds a unique program.
      {
        membership_id: 'M3',
        membership_program_id: 'P-silver',
        program_name: 'Silver ',
        program_description: 'Silver plan',
        program_match: 'unique',
        program_candidates: 1,
        is_active: false,
      },
      // Two programs of the same company share the name: the smallest id, flagged ambiguous.
      {
        membership_id: 'M4',
        membership_program_id: 'P-bronze-a',
        program_name: 'Bronze',
        program_description: 'first',
        program_match: 'ambiguous',
        program_candidates: 2,
        is_active: true,
      },
      // Programs of another source never match.
      {
        membership_id: 'M5',
        membership_program_id: null,
        program_name: null,
        program_description: null,
        program_match: 'none',
        program_candidates: 0,
        is_active: true,
      },
    ]);
  });
});

describe('customer_overview', () => {
  it('gives each current customer the last and next appointment and whether a membership is active', async () => {
    const { rows } = await db.pool.query(
      `SELECT customer_id, to_char(last_visit, 'YYYY-MM-DD') AS last_visit, to_char(last_appointment_at, 'YYYY-MM-DD"T"HH24:MI') AS last_appt,
              to_char(next_appointment_at, 'YYYY-MM-DD"T"HH24:MI') AS next_appt, appointments, active_memberships, has_active_membership,
              to_char(next_bill_date, 'YYYY-MM-DD') AS next_bill_date
       FROM customer_overview ORDER BY customer_id`,
    );
    expect(rows).toEqual([
      {
        customer_id: 'U1',
        last_visit: day(-3),
        last_appt: `${day(-1)}T08:00`,
        next_appt: `${day(7)}T09:00`,
        appointments: 4,
        active_memberships: 3,
        has_active_membership: true,
        next_bill_date: day(0),
      },
      {
        customer_id: 'U2',
        last_visit: null,
        last_appt: `${day(-3)}T15:00`,
        next_appt: null,
        appointments: 2,
        active_memberships: 0,
        has_active_membership: false,
        next_bill_date: null,
      },
    ]);
  });
});

describe('appointments_per_company_day', () => {
  it('counts current appointments per source, company and day', async () => {
    const { rows } = await db.pool.query(
      `SELECT source, company_id, company_name, to_char(day, 'YYYY-MM-DD') AS day, appointments, customers, employees
       FROM appointments_per_company_day ORDER BY source, day, company_id`,
    );
    expect(rows).toEqual([
      { source: 'core', company_id: 'C1', company_name: 'Downtown', day: day(-3), appointments: 3, customers: 2, employees: 2 },
      { source: 'core', company_id: 'C2', company_name: 'Uptown', day: day(-3), appointments: 1, customers: 1, employees: 1 },
      { source: 'core', company_id: 'C9', company_name: null, day: day(-1), appointments: 1, customers: 1, employees: 1 },
      { source: 'core', company_id: 'C1', company_name: 'Downtown', day: day(7), appointments: 1, customers: 1, employees: 1 },
      { source: 'other', company_id: 'C1', company_name: 'Elsewhere', day: day(-3), appointments: 1, customers: 1, employees: 1 },
    ]);
  });
});
