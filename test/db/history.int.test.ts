/**
 * History mode on a real PostgreSQL: versions written with the page that
 * changes them, only when the content changes, closed when a record is marked
 * not seen, caught up when history is switched on, consistent when two
 * transactions write the same record at once, and queried "as of" an instant.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { waitUntil } from '../support/time-scale.ts';
import { withTransaction } from '../../src/db/pool.ts';
import { prepareTable, writePage, idReader, type WriteOptions } from '../../src/sync/page.ts';
import { dbNow as passStartNow, markNotSeen } from '../../src/db/rows.ts';
import customers from '../../src/sync/streams/core/customers.ts';
import type { CoreSourceConfig } from '../../src/config/schema.ts';

let db: TestDatabase;
const log = pino({ level: 'silent' });
const HISTORY = { history: true, overrides: [] };
const NO_HISTORY = { history: false, overrides: [] };

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());
beforeEach(async () => {
  await db.pool.query('TRUNCATE customers, customers_history, pmsync.history_tables');
});

function customer(id: string, firstName: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { CustomerId: id, FirstName: firstName, LastName: 'Ng', ModifiedOn: '2026-01-01T00:00:00', ...extra };
}

// Each write's request is sent a second after the one before: a later copy is never taken for an older one.
let sent = Date.now();
const nextSentAt = () => new Date((sent += 1000));

function options(settings = HISTORY, sentAt = nextSentAt()): WriteOptions {
  return { source: 's1', runId: 1, sentAt, markSeen: true, idOf: idReader('CustomerId'), settings };
}

const write = (records: unknown[], settings = HISTORY) =>
  withTransaction(db.pool, (tx) => writePage(tx, customers, records, options(settings)));

interface Version {
  id: string;
  first_name: string;
  is_current: boolean;
  valid_from: string;
  valid_to: string | null;
}

async function versions(id?: string): Promise<Version[]> {
  const res = await db.pool.query<Version>(
    `SELECT id, first_name, is_current, valid_from::text, valid_to::text FROM customers_history
     WHERE source = 's1' AND ($1::text IS NULL OR id = $1) ORDER BY id, valid_from`,
    [id ?? null],
  );
  return res.rows;
}

async function dbNow(): Promise<string> {
  return (await db.pool.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now;
}

/** Until the backend waits for a lock another transaction holds. */
async function waitUntilBlocked(pid: number): Promise<void> {
  const blocked = async () =>
    (await db.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [pid])).rows.length > 0;
  await waitUntil(blocked, `backend ${pid} to wait for the lock`, { timeoutMs: 5_000, everyMs: 10 });
}

async function asOf(at: string): Promise<Record<string, string>> {
  const res = await db.pool.query<{ id: string; first_name: string }>(
    "SELECT id, first_name FROM customers_as_of($1) WHERE source = 's1' ORDER BY id",
    [at],
  );
  return Object.fromEntries(res.rows.map((r) => [r.id, r.first_name]));
}

describe('history versions', () => {
  it('are written with the page, once per content, and the current one matches the table', async () => {
    await write([customer('a', 'Ann'), customer('b', 'Bo')]);
    expect((await versions()).map((v) => [v.id, v.first_name, v.is_current, v.valid_to])).toEqual([
      ['a', 'Ann', true, null],
      ['b', 'Bo', true, null],
    ]);
    expect(await write([customer('a', 'Ann'), customer('b', 'Bo')])).toMatchObject({ unchanged: 2 });
    expect(await versions()).toHaveLength(2);

    const current = await db.pool.query(
      `SELECT count(*)::int AS n FROM customers t JOIN customers_history h USING (source, id)
       WHERE h.is_current AND h.content_hash = t.content_hash AND h.raw = t.raw AND h.first_name = t.first_name
         AND h.last_name = t.last_name AND h.fetched_at = t.fetched_at AND h.run_id = t.run_id`,
    );
    expect(current.rows[0].n).toBe(2);
  });

  it('close the old version when the content changes, and answer "as of" before and after', async () => {
    await write([customer('a', 'Ann')]);
    const before = await dbNow();
    await write([customer('a', 'Anne', { ModifiedOn: '2026-01-02T00:00:00' })]);
    const after = await dbNow();
    const [old, now] = await versions('a');
    expect(old).toMatchObject({ first_name: 'Ann', is_current: false });
    expect(now).toMatchObject({ first_name: 'Anne', is_current: true, valid_to: null });
    expect(old!.valid_to).toBe(now!.valid_from);
    expect(await asOf(before)).toEqual({ a: 'Ann' });
    expect(await asOf(after)).toEqual({ a: 'Anne' });
  });

  it('close when the record is marked not seen, and open again when it comes back', async () => {
    await write([customer('a', 'Ann'), customer('b', 'Bo')]);
    // A full pass starts the way the product starts one: the database's clock to the millisecond
    // (last_seen_at keeps milliseconds). Taken once that clock has passed the first write's stamp.
    const seen = await db.pool.query<{ at: Date }>("SELECT max(last_seen_at) AS at FROM customers WHERE source = 's1'");
    let passStart = await passStartNow(db.pool);
    while (passStart <= seen.rows[0]!.at) passStart = await passStartNow(db.pool);
    await write([customer('b', 'Bo')]);
    await withTransaction(db.pool, (tx) => markNotSeen(tx, customers.table, 's1', passStart, true));
    const gone = await dbNow();
    const [a] = await versions('a');
    expect(a).toMatchObject({ is_current: false });
    const marked = await db.pool.query<{ at: string }>("SELECT not_seen_since::text AS at FROM customers WHERE id = 'a'");
    // the same instant (not_seen_since keeps milliseconds, valid_to microseconds)
    expect(Math.abs(new Date(a!.valid_to!).getTime() - new Date(marked.rows[0]!.at).getTime())).toBeLessThanOrEqual(1);
    expect(await asOf(gone)).toEqual({ b: 'Bo' });

    expect(await write([customer('a', 'Ann')])).toMatchObject({ updated: 1 });
    const back = await versions('a');
    expect(back.map((v) => [v.first_name, v.is_current])).toEqual([
      ['Ann', false],
      ['Ann', true],
    ]);
  });

  it('are not written for tables without history, nor by a page whose transaction rolls back', async () => {
    await write([customer('a', 'Ann')], NO_HISTORY);
    expect(await versions()).toEqual([]);
    await expect(
      withTransaction(db.pool, async (tx) => {
        await writePage(tx, customers, [customer('b', 'Bo')], options());
        throw new Error('the checkpoint could not be saved');
      }),
    ).rejects.toThrow('checkpoint');
    expect(await versions()).toEqual([]);
    expect((await db.pool.query("SELECT count(*)::int AS n FROM customers WHERE id = 'b'")).rows[0].n).toBe(0);
  });

  it('stay consistent when two transactions write the same record at once', async () => {
    await write([customer('a', 'Ann')]);
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    try {
      const pid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await first.query('BEGIN');
      await second.query('BEGIN');
      await writePage(first, customers, [customer('a', 'First', { ModifiedOn: '2026-01-02T00:00:00' })], options(HISTORY, nextSentAt()));
      // The second waits for the first's lock on the row, then writes after it.
      const waiting = writePage(
        second,
        customers,
        [customer('a', 'Second', { ModifiedOn: '2026-01-03T00:00:00' })],
        options(HISTORY, nextSentAt()),
      );
      await waitUntilBlocked(pid);
      await first.query('COMMIT');
      await waiting;
      await second.query('COMMIT');
    } finally {
      first.release();
      second.release();
    }
    const all = await versions('a');
    expect(all.map((v) => [v.first_name, v.is_current])).toEqual([
      ['Ann', false],
      ['First', false],
      ['Second', true],
    ]);
    expect(all[0]!.valid_to).toBe(all[1]!.valid_from);
    expect(all[1]!.valid_to).toBe(all[2]!.valid_from);
  });
});

describe('switching history on', () => {
  const source = { name: 's1', kind: 'core', columns: {}, history: ['customers'] } as unknown as CoreSourceConfig;
  const off = { ...source, history: [] } as CoreSourceConfig;

  it('copies the current rows in as first versions, and rows already gone as closed ones', async () => {
    await write([customer('a', 'Ann'), customer('b', 'Bo'), customer('c', 'Cy')], NO_HISTORY);
    await db.pool.query("UPDATE customers SET not_seen_since = now() WHERE id = 'c'");
    expect(await prepareTable(db.pool, log, source, customers)).toEqual(HISTORY);
    const all = await versions();
    expect(all.map((v) => [v.id, v.is_current])).toEqual([
      ['a', true],
      ['b', true],
      ['c', false],
    ]);
    const synced = await db.pool.query<{ id: string; at: string }>("SELECT id, synced_at::text AS at FROM customers WHERE id = 'a'");
    expect(new Date(all[0]!.valid_from).getTime()).toBe(new Date(synced.rows[0]!.at).getTime()); // when the row got this content
    // a second run finds history already kept and copies nothing
    await prepareTable(db.pool, log, source, customers);
    expect(await versions()).toHaveLength(3);
  });

  it('catches up what changed while it was off', async () => {
    await prepareTable(db.pool, log, source, customers);
    await write([customer('a', 'Ann'), customer('b', 'Bo')]);
    await prepareTable(db.pool, log, off, customers);
    await write([customer('a', 'Annie', { ModifiedOn: '2026-01-05T00:00:00' })], NO_HISTORY);
    await db.pool.query("UPDATE customers SET not_seen_since = now() WHERE id = 'b'");
    await prepareTable(db.pool, log, source, customers);
    expect((await versions()).map((v) => [v.id, v.first_name, v.is_current])).toEqual([
      ['a', 'Ann', false],
      ['a', 'Annie', true],
      ['b', 'Bo', false],
    ]);
  });
});
