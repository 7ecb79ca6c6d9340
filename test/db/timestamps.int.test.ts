/**
 * timestamptz values read by the fast path (src/db/timestamps.ts) are the
 * instants postgres-date reads from the same text, for every form the
 * fast path takes and for the forms it leaves to postgres-date, and the
 * values PostgreSQL itself returns come back as the instants written,
 * whatever the session's TimeZone.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTimestamptz } from '../../src/db/timestamps.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const postgresDate = createRequire(import.meta.url)('postgres-date') as (text: string) => Date | number | null;

/** The same value as postgres-date gives: the same instant (NaN alike), or the same number or null. */
function same(text: string): void {
  const a = parseTimestamptz(text);
  const b = postgresDate(text);
  if (a instanceof Date && b instanceof Date) expect([text, a.getTime()]).toEqual([text, b.getTime()]);
  else expect([text, a]).toEqual([text, b]);
}

/** A small deterministic generator (mulberry32), so a failure names the same text every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('parseTimestamptz against postgres-date', () => {
  it('reads every fraction length, edge of day, month and leap day as postgres-date does', () => {
    const next = random(7);
    const pad = (v: number, n: number) => String(v).padStart(n, '0');
    for (let i = 0; i < 20_000; i++) {
      const year = 1000 + Math.floor(next() * 9000);
      const base = `${pad(year, 4)}-${pad(1 + Math.floor(next() * 12), 2)}-${pad(1 + Math.floor(next() * 31), 2)} ${pad(Math.floor(next() * 24), 2)}:${pad(Math.floor(next() * 60), 2)}:${pad(Math.floor(next() * 60), 2)}`;
      const digits = Math.floor(next() * 7);
      const fraction = digits === 0 ? '' : `.${pad(Math.floor(next() * 10 ** digits), digits)}`;
      same(`${base}${fraction}+00`);
    }
    for (const text of [
      '2024-02-29 23:59:59.999999+00',
      '2027-11-07 06:00:00+00',
      '1999-12-31 23:59:59.9995+00',
      '2026-01-01 00:00:00.001+00',
      '2026-01-01 00:00:00.000+00',
      '1000-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999+00',
      '2026-02-30 10:00:00+00',
    ])
      same(text);
  });

  it('leaves other zones, early years, BC, infinity and malformed text to postgres-date', () => {
    for (const text of [
      '2026-03-12 10:00:00-05',
      '2026-03-12 10:00:00.25+05:30',
      '2026-03-12 10:00:00+01',
      '0050-03-12 10:00:00+00',
      '0999-03-12 10:00:00+00',
      '2026-03-12 10:00:00+00 BC',
      'infinity',
      '-infinity',
      '2026-03-12 10:00:00.+00',
      '2026-03-12T10:00:00+00',
      '2026-03-12 10:0a:00+00',
      '12026-03-12 10:00:00+00',
      '2026-03-12',
      'not a time',
    ])
      same(text);
  });
});

describe('timestamptz read from PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await db?.drop();
  });

  const instants = [
    '2026-03-12T10:00:00.000Z',
    '2026-03-12T10:00:00.123Z',
    '2027-11-07T06:30:00.007Z',
    '1970-01-01T00:00:00.000Z',
    '2024-02-29T23:59:59.999Z',
  ];

  it.each(['UTC', 'America/New_York', 'Asia/Kolkata'])('gives back the instants written in a session at %s', async (zone) => {
    const client = await db.pool.connect();
    try {
      await client.query(`SET TimeZone = '${zone}'`);
      const res = await client.query<{ t: Date }>('SELECT unnest($1::timestamptz[]) AS t', [instants.map((i) => new Date(i))]);
      expect(res.rows.map((r) => r.t.toISOString())).toEqual(instants);
      // Microseconds the driver cannot hold are cut to the millisecond, as postgres-date cuts them.
      const micro = await client.query<{ t: Date }>(`SELECT '2026-03-12 10:00:00.123999+00'::timestamptz AS t`);
      expect(micro.rows[0]!.t.toISOString()).toBe('2026-03-12T10:00:00.123Z');
    } finally {
      await client.query('RESET TimeZone');
      client.release();
    }
  });
});
