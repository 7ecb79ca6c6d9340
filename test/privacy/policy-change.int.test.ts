/**
 * Changing a column policy on a real PostgreSQL. A stricter policy rewrites
 * what is stored (rows, history versions, quarantined payloads and the
 * reasons quoting them) into exactly what a sync under that policy writes,
 * with no request; a looser one, or another hash key, is taken only by a
 * starting command, which says what to read again and what it costs, until a
 * full pass has read it; a page written under another policy than the stored
 * one is refused whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { SourceConfig } from '../../src/config/schema.ts';
import { withTransaction } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { ensurePolicy } from '../../src/state/privacy-policies.ts';
import { quarantine } from '../../src/state/quarantine.ts';
import { idReader, writePage } from '../../src/sync/page.ts';
import { applyPolicy, readAgainAdvice } from '../../src/sync/privacy-policies.ts';
import { OPEN_TABLE_POLICY } from '../../src/sync/privacy.ts';
import customers from '../../src/sync/streams/core/customers.ts';
import patients from '../../src/sync/streams/pro/patients.ts';
import { settingsFor } from '../../src/sync/table-settings.ts';
import type { StreamBase } from '../../src/sync/types.ts';
import { writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const KEY = 'change-key-Xw3-Fp9-Ld2-Qa7-Mn5-Ts8-Jb1';
const OTHER_KEY = 'other-key-Yv4-Gq0-Ke3-Rb8-No6-Ut9-Hc2';
const STRICT = {
  key: KEY,
  columns: { personal: 'hash', 'customers.mobile_phone': 'drop', 'customers.birthday': 'year', 'pro_patients.dob': 'drop' },
  raw: 'declared',
};

let db: TestDatabase;
let sent = Date.parse('2026-06-01T00:00:00Z');

function source(name: string, privacy?: Record<string, unknown>, kind: 'core' | 'pro' = 'core'): SourceConfig {
  const entry =
    kind === 'core'
      ? { name, kind, baseUrl: 'https://h/api/v1', apikey: 'a', username: 'u', password: 'p', history: ['customers'] }
      : { name, kind, baseUrl: 'https://pro.example.com', practiceId: 3, token: 't', history: ['pro_patients'] };
  // At the top level: entries naming the other kind's tables are for the sources that have them.
  return loadConfig(STREAM_REGISTRY, { configFile: writeConfig({ ...(privacy ? { privacy } : {}), sources: [entry] }), env: {} })
    .sources[0]!;
}

function customer(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    CustomerId: id,
    CompanyId: 'co1',
    FirstName: `Ann${id}`,
    LastName: 'Lee',
    Email: `Ann.${id}@Example.com`,
    MobilePhone: '(415) 555-0101',
    IsActive: true,
    Birthday: '1984-07-02',
    ModifiedOn: '2026-05-01T10:00:00',
    Notes: `allergic to penicillin ${id}`,
    ...extra,
  };
}

async function write(s: SourceConfig, stream: StreamBase, records: unknown[], idField: string) {
  return withTransaction(db.pool, (tx) =>
    writePage(tx, stream, records, {
      source: s.name,
      runId: null,
      sentAt: new Date((sent += 1000)),
      markSeen: true,
      idOf: idReader(idField),
      settings: settingsFor(s, stream),
    }),
  );
}

async function rows(table: string, name: string) {
  const res = await db.pool.query(
    `SELECT id, first_name, email, mobile_phone, birthday::text AS birthday, raw, content_hash FROM ${table} WHERE source = $1 ORDER BY id, content_hash`,
    [name],
  );
  return res.rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

describe('a stricter policy', () => {
  it('rewrites rows, history and quarantined payloads into what a sync under it writes', async () => {
    const open = source('a');
    await write(open, customers, [customer('1'), customer('2'), customer('3', { IsActive: 'yes' })], 'CustomerId');
    await write(open, customers, [customer('2', { Email: 'second@example.org', ModifiedOn: '2026-05-02T10:00:00' })], 'CustomerId');
    await withTransaction(db.pool, (tx) =>
      quarantine(tx, 'a', 'customers', null, [
        { recordId: '9', raw: customer('9'), reason: 'database refused a value: invalid input "Ann.9@Example.com"' },
      ]),
    );

    const strict = source('a', STRICT);
    const outcome = await ensurePolicy(db.pool, 'a', customers, settingsFor(strict, customers).privacy!, 'start');
    expect(outcome).toMatchObject({ rewritten: { rows: 2, versions: 3, quarantined: 2 }, looser: [], resyncNeeded: null });

    // The same records synced under the strict policy from the start, as another source.
    const fresh = source('b', STRICT);
    await ensurePolicy(db.pool, 'b', customers, settingsFor(fresh, customers).privacy!, 'start');
    await write(fresh, customers, [customer('1'), customer('3', { IsActive: 'yes' })], 'CustomerId');
    await write(fresh, customers, [customer('2', { Email: 'second@example.org', ModifiedOn: '2026-05-02T10:00:00' })], 'CustomerId');
    const strip = (r: Record<string, unknown>[]) => r.map(({ ...x }) => x);
    expect(strip(await rows('customers', 'a'))).toEqual(strip(await rows('customers', 'b')));
    const current = await db.pool.query(
      `SELECT source, id, email, raw, content_hash FROM customers_history WHERE is_current AND id = '2' ORDER BY source`,
    );
    expect(current.rows[0]).toEqual({ ...current.rows[1], source: 'a' });
    const a = (await rows('customers', 'a'))[0]!;
    expect(a.email).toMatch(/^[0-9a-f]{64}$/);
    expect(a).toMatchObject({ mobile_phone: null, birthday: '1984-01-01' });
    expect(Object.keys(a.raw)).not.toContain('Notes');

    const quarantined = await db.pool.query(
      `SELECT source, record_id, raw, reason FROM pmsync.quarantine WHERE resource = 'customers' ORDER BY source, record_id`,
    );
    const text = JSON.stringify(quarantined.rows.filter((r) => r.source === 'a'));
    expect(text).not.toMatch(/Ann\.9@Example\.com|Ann3|555-0101|penicillin|1984-07-02/);
    expect(quarantined.rows.find((r) => r.record_id === '9').reason).toBe('database refused a value: invalid input "[removed]"');
    expect(quarantined.rows.find((r) => r.source === 'a' && r.record_id === '3').raw).toEqual(
      quarantined.rows.find((r) => r.source === 'b' && r.record_id === '3').raw,
    );

    // The next fetch of the same records finds them unchanged: nothing to rewrite again.
    expect(await write(strict, customers, [customer('1')], 'CustomerId')).toMatchObject({ unchanged: 1, updated: 0 });
    expect((await ensurePolicy(db.pool, 'a', customers, settingsFor(strict, customers).privacy!, 'run')).rewritten).toBeNull();
  });

  it('keeps a row\'s "read at this version" mark in step with its rewritten content hash', async () => {
    const open = source('p', undefined, 'pro');
    await write(open, patients, [{ patientId: 1, firstName: 'Ann', lastName: 'Lee', dob: '1984-07-02', cellPhone: '555' }], 'patientId');
    await db.pool.query(`UPDATE pro_patients SET appointments_read_hash = content_hash WHERE source = 'p'`);
    const strict = source('p', STRICT, 'pro');
    await ensurePolicy(db.pool, 'p', patients, settingsFor(strict, patients).privacy!, 'start');
    const r = await db.pool.query(`SELECT appointments_read_hash = content_hash AS same, dob, raw FROM pro_patients WHERE source = 'p'`);
    expect(r.rows[0]).toMatchObject({ same: true, dob: null });
    expect(r.rows[0].raw).not.toHaveProperty('dob');
  });
});

describe('a looser policy', () => {
  const lines: string[] = [];
  const logger = createLogger(new Redactor(), { level: 'info', destination: { write: (l: string) => lines.push(l) } });

  it('is refused inside a running process, and taken by a starting one, which says what to read again and what it costs', async () => {
    const open = source('a');
    await expect(applyPolicy(db.pool, logger, open, customers, settingsFor(open, customers), 'run')).rejects.toThrow(
      /looser than the stored one \(customers\.birthday: year -> keep; .*customers\.mobile_phone: drop -> keep; customers raw: declared -> all\): a running process does not loosen a policy; restart/,
    );
    await applyPolicy(db.pool, logger, open, customers, settingsFor(open, customers), 'start');
    const warning = JSON.parse(lines.find((l) => l.includes('looser'))!);
    expect(warning.msg).toContain('source "a": the privacy policy of customers is looser than the one its stored rows follow');
    expect(warning.msg).toContain('read them again with "pmsync resync customers --source a --full" (about 1 request for 2 stored rows)');
    expect(warning.msg).toContain('customers raw: declared -> all');
    // Stored rows keep their stricter form: nothing was read back into them.
    expect((await rows('customers', 'a'))[0]!.mobile_phone).toBeNull();
    // Taken: the stored policy is now the open one, and pages under it are written.
    expect(await write(open, customers, [customer('4')], 'CustomerId')).toMatchObject({ inserted: 1 });
  });

  it('stays said at every start until a full pass has read the records again', async () => {
    const open = source('a');
    lines.length = 0;
    await applyPolicy(db.pool, logger, open, customers, settingsFor(open, customers), 'start');
    expect(lines.some((l) => l.includes('looser'))).toBe(true);
    await db.pool.query(
      `INSERT INTO pmsync.runs (source, resource, mode, status, started_at) VALUES ('a', 'customers', 'full', 'succeeded', now() + interval '1 second')`,
    );
    lines.length = 0;
    await applyPolicy(db.pool, logger, open, customers, settingsFor(open, customers), 'start');
    expect(lines.some((l) => l.includes('looser'))).toBe(false);
    expect(lines.some((l) => l.includes('were read again since its privacy policy was loosened'))).toBe(true);
    const row = await db.pool.query(`SELECT resync_needed FROM pmsync.privacy_policies WHERE source = 'a' AND table_name = 'customers'`);
    expect(row.rows[0].resync_needed).toBeNull();
  });

  it('counts a changed hash key as looser: values hashed with the old key no longer join', async () => {
    const before = source('k', { key: KEY, columns: { 'customers.email': 'hash' } });
    await ensurePolicy(db.pool, 'k', customers, settingsFor(before, customers).privacy!, 'start');
    await write(before, customers, [customer('1')], 'CustomerId');
    const after = source('k', { key: OTHER_KEY, columns: { 'customers.email': 'hash', 'customers.last_name': 'hash' } });
    const outcome = await ensurePolicy(db.pool, 'k', customers, settingsFor(after, customers).privacy!, 'start');
    expect(outcome.looser).toEqual(['customers.email: hashed with another key']);
    expect(outcome.rewritten).toMatchObject({ rows: 1 });
    const stored = await db.pool.query(`SELECT policy::text AS p, key_fingerprint FROM pmsync.privacy_policies WHERE source = 'k'`);
    expect(stored.rows[0].p).not.toContain(OTHER_KEY);
    expect(stored.rows[0].p).not.toContain(KEY);
    expect(await readAgainAdvice(db.pool, after, customers)).toContain('pmsync resync customers --source k --full');
  });
});

describe('a page under another policy than the stored one', () => {
  it('is refused whole, with nothing written', async () => {
    const stale = source('k', { key: KEY, columns: { 'customers.email': 'hash' } });
    await expect(write(stale, customers, [customer('7')], 'CustomerId')).rejects.toThrow(
      /privacy policy stored for customers of source "k" is not the one this process writes with/,
    );
    const n = await db.pool.query(`SELECT count(*)::int AS n FROM customers WHERE source = 'k' AND id = '7'`);
    expect(n.rows[0].n).toBe(0);
    // A table that never had a policy takes pages written with none.
    expect(
      await withTransaction(db.pool, (tx) =>
        writePage(tx, customers, [customer('1')], {
          source: 'never',
          runId: null,
          sentAt: new Date(),
          markSeen: true,
          idOf: idReader('CustomerId'),
          settings: { history: false, overrides: [], privacy: OPEN_TABLE_POLICY },
        }),
      ),
    ).toMatchObject({ inserted: 1 });
  });
});
