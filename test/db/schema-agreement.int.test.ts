/**
 * The stream files, schema.prisma and prisma/migrations must describe the same
 * tables: every model's table and columns exist after the migrations run, with
 * the same types, nullability and primary keys, and no migrated table is
 * missing from the schema; the stream tables in schema.prisma are the ones the
 * stream files generate, and the migrations leave nothing for
 * `npm run tables -- --migration` to write. The DMMF comes from Prisma's own
 * schema parser (WebAssembly).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { PRO_STREAMS, REST_STREAMS } from '../../src/sync/streams/index.ts';
import { readModels, type DmmfField } from '../../scripts/prisma-dmmf.ts';
import { existingTables, migrationSql, regenerate, streamTables } from '../../scripts/stream-tables.ts';
import type { TableDef } from '../../src/db/table.ts';

const schema = readFileSync(new URL('../../prisma/schema.prisma', import.meta.url), 'utf8');
const models = readModels(schema);

function expectedType(f: DmmfField): string {
  const native = f.nativeType?.[0];
  if (f.type === 'DateTime')
    return native === 'Date' ? 'date' : native === 'Timestamp' ? 'timestamp without time zone' : 'timestamp with time zone';
  return (
    {
      String: 'text',
      Boolean: 'boolean',
      Int: 'integer',
      BigInt: 'bigint',
      Decimal: 'numeric',
      Json: 'jsonb',
      Float: 'double precision',
    } as Record<string, string>
  )[f.type]!;
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

describe('schema.prisma and the migrations', () => {
  it('define the same tables and columns', async () => {
    const { rows } = await db.pool.query<{
      table_schema: string;
      table_name: string;
      column_name: string;
      data_type: string;
      is_nullable: string;
    }>(
      `SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable
       FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
       WHERE c.table_schema IN ('public', 'pmsync') AND t.table_type = 'BASE TABLE' AND c.table_name <> '_prisma_migrations'`,
    );
    const actual = new Map(
      rows.map((r) => [`${r.table_schema}.${r.table_name}.${r.column_name}`, { type: r.data_type, nullable: r.is_nullable === 'YES' }]),
    );
    const expected = new Map<string, { type: string; nullable: boolean }>();
    for (const m of models) {
      for (const f of m.fields.filter((x) => x.kind === 'scalar')) {
        const key = `${m.schema}.${m.dbName ?? m.name}.${f.dbName ?? f.name}`;
        // Prisma creates a scalar list as an array column without NOT NULL.
        expected.set(key, f.isList ? { type: 'ARRAY', nullable: true } : { type: expectedType(f), nullable: !f.isRequired });
      }
    }
    expect(Object.fromEntries([...actual].sort())).toEqual(Object.fromEntries([...expected].sort()));
  });

  it('agree on primary keys', async () => {
    const { rows } = await db.pool.query<{ tbl: string; cols: string[] }>(
      `SELECT tc.table_schema || '.' || tc.table_name AS tbl, array_agg(kcu.column_name::text ORDER BY kcu.ordinal_position) AS cols
       FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)
       WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema IN ('public', 'pmsync') AND tc.table_name <> '_prisma_migrations'
       GROUP BY 1`,
    );
    const actual = Object.fromEntries(rows.map((r) => [r.tbl, r.cols]));
    const expected: Record<string, string[]> = {};
    for (const m of models) {
      const col = (name: string) => m.fields.find((f) => f.name === name)!;
      const pk = m.primaryKey?.fields ?? m.fields.filter((f) => f.isId).map((f) => f.name);
      expected[`${m.schema}.${m.dbName ?? m.name}`] = pk.map((n) => col(n).dbName ?? n);
    }
    expect(actual).toEqual(expected);
  });

  it('hold every column each stream writes, with the type it declares, in the table and its history', async () => {
    const types: Record<string, string> = {
      text: 'text',
      boolean: 'boolean',
      date: 'date',
      timestamp: 'timestamp without time zone',
      numeric: 'numeric',
      integer: 'integer',
      bigint: 'bigint',
      jsonb: 'jsonb',
    };
    const streams = [...REST_STREAMS, ...PRO_STREAMS.filter((s) => s.kind !== 'pro-snapshot')] as Array<(typeof REST_STREAMS)[number]>;
    for (const s of streams) {
      for (const table of [s.table.name, `${s.table.name}_history`]) {
        const { rows } = await db.pool.query<{ column_name: string; data_type: string }>(
          `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
          [table],
        );
        const cols = Object.fromEntries(rows.map((r) => [r.column_name, r.data_type]));
        for (const [name, type] of Object.entries(s.table.columns)) expect(cols[name], `${table}.${name}`).toBe(types[type]);
        if (table.endsWith('_history')) expect(cols.id, `${table}.id`).toBe(s.table.idType);
      }
    }
  });

  it('are what the stream files declare: schema.prisma is regenerated unchanged and no migration is pending', async () => {
    expect(regenerate(schema, streamTables()) === schema, 'schema.prisma is stale: run "npm run tables"').toBe(true);
    expect(migrationSql(await existingTables(db.pool), schema, streamTables())).toBe('');
  });
});

describe('npm run tables -- --migration', () => {
  it('writes the SQL that brings the migrated tables to a changed stream set, history tables included', async () => {
    const scratch = await createTestDatabase();
    try {
      const changed: TableDef[] = streamTables().map((t) =>
        t.name === 'customers' ? { ...t, columns: { ...t.columns, loyalty_points: 'integer' } } : t,
      );
      changed.push({
        name: 'invoices',
        idType: 'text',
        columns: { customer_id: 'text', total: 'numeric', due_on: 'date', issued_at: 'timestamp', paid: 'boolean' },
        indexes: [['source', 'customer_id']],
      });
      const next = regenerate(schema, changed);
      const sql = migrationSql(await existingTables(scratch.pool), next, changed);
      expect(sql).toContain('ALTER TABLE "public"."customers" ADD COLUMN "loyalty_points" INTEGER;');
      expect(sql).toContain('ALTER TABLE "public"."customers_history" ADD COLUMN "loyalty_points" INTEGER;');
      expect(sql).toContain('CREATE TABLE "public"."invoices" (');
      expect(sql).toContain('CREATE TABLE "public"."invoices_history" (');
      await scratch.pool.query(sql);

      // The database now holds exactly what the regenerated schema declares.
      const actual = await columnsOf(scratch, ['customers', 'customers_history', 'invoices', 'invoices_history']);
      const expected = new Map<string, { type: string; nullable: boolean }>();
      for (const m of readModels(next).filter((x) =>
        ['customers', 'customers_history', 'invoices', 'invoices_history'].includes(x.dbName!),
      ))
        for (const f of m.fields.filter((x) => x.kind === 'scalar'))
          expected.set(`${m.dbName}.${f.dbName ?? f.name}`, { type: expectedType(f), nullable: !f.isRequired });
      expect(Object.fromEntries([...actual].sort())).toEqual(Object.fromEntries([...expected].sort()));
      expect(migrationSql(await existingTables(scratch.pool), next, changed), 'a second run has nothing left to write').toBe('');
      const asOf = await scratch.pool.query(`SELECT count(*)::int AS n FROM public.invoices_as_of(now())`);
      expect(asOf.rows[0].n).toBe(0);
    } finally {
      await scratch.drop();
    }
  });
});

async function columnsOf(target: TestDatabase, tables: string[]): Promise<Map<string, { type: string; nullable: boolean }>> {
  const { rows } = await target.pool.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(
    `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = ANY($1)`,
    [tables],
  );
  return new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, { type: r.data_type, nullable: r.is_nullable === 'YES' }]));
}
