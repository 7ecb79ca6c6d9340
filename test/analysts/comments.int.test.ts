/**
 * Every resource table, history table and view explains itself in the
 * database: its COMMENTs are the descriptions docs/tables.md shows (the
 * stream files' column declarations, with the API field each column is read
 * from), set by a migration `npm run tables -- --migration` generated, so
 * SQL clients and BI tools show them.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { commentSql, existingComments, SCHEMA_FILE, streamTables } from '../../scripts/stream-tables.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

describe('COMMENTs in the migrated database', () => {
  it('describe every column of every table and view of the public schema', async () => {
    const { rows } = await db.pool.query<{ rel: string; kind: string; column: string | null }>(
      `SELECT c.relname AS rel, c.relkind AS kind, NULL AS column FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') AND c.relname <> '_prisma_migrations' AND obj_description(c.oid, 'pg_class') IS NULL
       UNION ALL
       SELECT c.relname, c.relkind, a.attname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
       WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') AND c.relname <> '_prisma_migrations' AND a.attnum > 0 AND NOT a.attisdropped
         AND col_description(c.oid, a.attnum) IS NULL`,
    );
    expect(rows.map((r) => (r.column ? `${r.rel}.${r.column}` : r.rel))).toEqual([]);
    const tables = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`,
    );
    expect(tables.rows[0]!.n, 'the check saw the resource and history tables').toBeGreaterThan(2 * streamTables().length);
  });

  it('say what each typed column means and which API field it is read from, in the table and its history', async () => {
    const comment = async (table: string, column: string) =>
      (
        await db.pool.query<{ c: string | null }>(
          `SELECT col_description(('public.' || quote_ident($1))::regclass, a.attnum) AS c FROM pg_attribute a
           WHERE a.attrelid = ('public.' || quote_ident($1))::regclass AND a.attname = $2`,
          [table, column],
        )
      ).rows[0]?.c;
    expect(await comment('customers', 'email')).toMatch(/^The customer's email address\. API field: Email\. Personal data \(email\)/);
    expect(await comment('customers_history', 'email')).toBe(await comment('customers', 'email'));
    expect(await comment('pro_waitlist_entries', 'patient_id')).toBe(
      'The patient waiting: pro_patients.id. API field: patient.patientId or patientId.',
    );
    expect(await comment('customer_overview', 'is_active')).toBe('Whether the customer is active at the source. API field: IsActive.');
    expect(await comment('orders', 'not_seen_since')).toMatch(/^Set when the API stopped returning the record/);
    for (const t of streamTables()) {
      for (const column of Object.keys(t.columns)) {
        const text = await comment(t.name, column);
        expect(t.docs?.[column]?.doc, `${t.name}.${column} declares its meaning in its stream file`).toBeTruthy();
        expect(text, `${t.name}.${column}`).toContain(t.docs![column]!.doc!);
        expect(text, `${t.name}.${column}`).toContain(`API field: ${t.docs![column]!.reads.join(' or ')}.`);
      }
    }
  });

  it('are what the declarations say: no comment migration is pending (run "npm run tables -- --migration <name>")', async () => {
    expect(commentSql(await existingComments(db.pool), readFileSync(SCHEMA_FILE, 'utf8'))).toBe('');
  });

  it('a changed declaration makes the generator write exactly the changed comment', async () => {
    const existing = await existingComments(db.pool);
    existing.get('public.customers')!.columns.set('email', 'an older text');
    expect(commentSql(existing, readFileSync(SCHEMA_FILE, 'utf8'))).toMatch(
      /^COMMENT ON COLUMN "public"\."customers"\."email" IS 'The customer''s email address\. API field: Email\. [^\n]*';\n$/,
    );
  });
});
