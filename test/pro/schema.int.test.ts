/**
 * Every Pro stream's table holds the columns its mapper writes, with the
 * declared types, plus the metadata columns the page upsert writes.
 * (test/db/schema-agreement.int.test.ts proves schema.prisma and the
 * migrations agree.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRO_STREAMS } from '../../src/sync/streams/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const TYPES: Record<string, string> = {
  text: 'text',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamp without time zone',
  numeric: 'numeric',
  integer: 'integer',
  bigint: 'bigint',
  jsonb: 'jsonb',
};
const METADATA = {
  id: 'bigint',
  source: 'text',
  raw: 'jsonb',
  content_hash: 'text',
  source_modified_at: 'timestamp without time zone',
  fetched_at: 'timestamp with time zone',
  first_seen_at: 'timestamp with time zone',
  synced_at: 'timestamp with time zone',
  last_seen_at: 'timestamp with time zone',
  run_id: 'bigint',
  not_seen_since: 'timestamp with time zone',
};

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

async function columns(table: string): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ column_name: string; data_type: string }>(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
    [table],
  );
  return Object.fromEntries(rows.map((r) => [r.column_name, r.data_type]));
}

describe('Pro tables', () => {
  for (const s of PRO_STREAMS) {
    if (s.kind === 'pro-snapshot') continue;
    it(`${s.table.name} holds every column ${s.resource} writes, keyed by (source, id) with a bigint id`, async () => {
      const cols = await columns(s.table.name);
      expect(s.table.idType).toBe('bigint');
      for (const [name, type] of Object.entries({
        ...METADATA,
        ...Object.fromEntries(Object.entries(s.table.columns).map(([n, t]) => [n, TYPES[t]!])),
      })) {
        expect(cols[name], `${s.table.name}.${name}`).toBe(type);
      }
    });
  }

  it('availability snapshots are keyed by capture, event type, provider (and slot)', async () => {
    const { rows } = await db.pool.query<{ tbl: string; cols: string[] }>(
      `SELECT tc.table_name AS tbl, array_agg(kcu.column_name::text ORDER BY kcu.ordinal_position) AS cols
       FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)
       WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name LIKE 'pro_availability_%' GROUP BY 1 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { tbl: 'pro_availability_captures', cols: ['source', 'captured_at'] },
      { tbl: 'pro_availability_providers', cols: ['source', 'captured_at', 'event_type_id', 'provider_id'] },
      { tbl: 'pro_availability_slots', cols: ['source', 'captured_at', 'event_type_id', 'provider_id', 'slot_at'] },
    ]);
  });
});
