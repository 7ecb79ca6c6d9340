import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { upsertPage } from '../../src/db/upsert.ts';
import { withTransaction } from '../../src/db/pool.ts';
import customers from '../../src/sync/streams/core/customers.ts';
import type { MappedRow } from '../../src/db/table.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());
beforeEach(async () => {
  await db.pool.query('TRUNCATE customers');
});

function row(
  id: string,
  firstName: string,
  modifiedOn = '2026-01-01T00:00:00',
  extra: Record<string, unknown> = {},
): MappedRow & { raw: unknown } {
  const raw = { CustomerId: id, FirstName: firstName, ModifiedOn: modifiedOn, ...extra };
  return { ...customers.map(customers.raw.parse(raw)), raw };
}

const write = (rows: Array<MappedRow & { raw: unknown }>, fetchedAt = new Date()) =>
  withTransaction(db.pool, (tx) => upsertPage(tx, customers.table, rows, { source: 's1', runId: 1, fetchedAt }));

describe('page upsert', () => {
  it('reports inserted, updated and unchanged, and skips writes that change nothing', async () => {
    expect(await write([row('a', 'Ann'), row('b', 'Bob')])).toMatchObject({ inserted: 2, updated: 0, unchanged: 0 });
    const before = await db.pool.query("SELECT synced_at FROM customers WHERE id = 'a'");
    expect(await write([row('a', 'Ann'), row('b', 'Robert', '2026-01-02T00:00:00'), row('c', 'Cy')])).toMatchObject({
      inserted: 1,
      updated: 1,
      unchanged: 1,
    });
    const after = await db.pool.query("SELECT synced_at, xmin FROM customers WHERE id = 'a'");
    expect(after.rows[0].synced_at).toEqual(before.rows[0].synced_at);
    const b = await db.pool.query("SELECT first_name, raw->>'FirstName' AS raw_name FROM customers WHERE id = 'b'");
    expect(b.rows[0]).toEqual({ first_name: 'Robert', raw_name: 'Robert' });
  });

  it('treats key order in the raw record as no change', async () => {
    await write([{ ...row('k', 'Kim'), raw: { CustomerId: 'k', FirstName: 'Kim', ModifiedOn: '2026-01-01T00:00:00' } }]);
    const again = { ...row('k', 'Kim'), raw: { ModifiedOn: '2026-01-01T00:00:00', FirstName: 'Kim', CustomerId: 'k' } };
    expect(await write([again])).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
  });

  it('never overwrites a newer copy with an older fetch', async () => {
    const t1 = new Date('2026-03-01T10:00:00Z');
    const t0 = new Date('2026-03-01T09:00:00Z');
    await write([row('x', 'New', '2026-02-02T00:00:00')], t1);
    expect(await write([row('x', 'Old', '2026-02-01T00:00:00')], t0)).toMatchObject({ updated: 0, unchanged: 1 });
    expect(await write([row('x', 'Old', '2026-02-01T00:00:00')], new Date('2026-03-01T11:00:00Z'))).toMatchObject({ updated: 0 });
    const r = await db.pool.query("SELECT first_name FROM customers WHERE id = 'x'");
    expect(r.rows[0].first_name).toBe('New');
  });

  it('keeps the last copy when a page lists a record twice', async () => {
    expect(await write([row('d', 'One'), row('d', 'Two')])).toMatchObject({ inserted: 1 });
    const r = await db.pool.query("SELECT first_name FROM customers WHERE id = 'd'");
    expect(r.rows[0].first_name).toBe('Two');
  });

  it('sets aside a row PostgreSQL refuses and lands the rest of the page', async () => {
    const bad = row('bad', 'Bad');
    bad.columns.birthday = '2026-13-45';
    const out = await write([row('g1', 'Good'), bad, row('g2', 'Good')]);
    expect(out.inserted).toBe(2);
    expect(out.failed.map((f) => f.row.id)).toEqual(['bad']);
    const r = await db.pool.query('SELECT id FROM customers ORDER BY id');
    expect(r.rows.map((x) => x.id)).toEqual(['g1', 'g2']);
  });
});
