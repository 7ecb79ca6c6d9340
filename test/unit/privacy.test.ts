/**
 * Column policies without a database: what each policy does to a value, how
 * a record is transformed before validation, what the configuration accepts
 * and refuses (every problem at once, never the key), and which changes of
 * policy can be applied to stored values.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { SourceConfig } from '../../src/config/schema.ts';
import { ConfigError } from '../../src/errors.ts';
import { transformRecord } from '../../src/privacy/record.ts';
import { parseRule } from '../../src/config/privacy.ts';
import { applyRule, hmacHex, isRemoved, keyFingerprint, normalised } from '../../src/privacy/rules.ts';
import { OPEN_STORED, policyChange, type StoredPolicy } from '../../src/privacy/stored.ts';
import { idReader, validateRecords } from '../../src/sync/page.ts';
import customers from '../../src/sync/streams/core/customers.ts';
import waitlist from '../../src/sync/streams/pro/waitlist.ts';
import { settingsFor } from '../../src/sync/table-settings.ts';
import { writeConfig } from '../support/cli.ts';

const KEY = 'k'.repeat(16) + 'e'.repeat(16) + 'y'.repeat(8);
const core = { name: 'clinic', kind: 'core', baseUrl: 'https://h/api/v1', apikey: 'apikey-1', username: 'u', password: 'password-1' };
const pro = { name: 'practice', kind: 'pro', baseUrl: 'https://pro.example.com', practiceId: 7, token: 'token-1' };

function load(file: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): SourceConfig[] {
  return loadConfig(STREAM_REGISTRY, { configFile: writeConfig(file), env }).sources;
}

function problems(file: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    load(file, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const customer = {
  CustomerId: 'c1',
  CompanyId: 'co1',
  FirstName: ' Ann ',
  LastName: 'Lee',
  Email: ' Ann.Lee@Example.com',
  MobilePhone: '(415) 555-0101',
  IsActive: true,
  Birthday: '1984-07-02',
  LastVisit: '2026-01-05',
  ModifiedOn: '2026-02-01T10:00:00',
  Notes: 'allergic to penicillin',
};

describe('policies on one value', () => {
  it('parse keep, drop, hash, year and prefix:N, nothing else', () => {
    expect(['keep', 'drop', 'hash', 'year', 'prefix:3'].map((t) => parseRule(t)?.kind)).toEqual(['keep', 'drop', 'hash', 'year', 'prefix']);
    expect(['Hash', 'prefix', 'prefix:0', 'prefix:x', 'mask'].map(parseRule)).toEqual([null, null, null, null, null]);
  });

  it('hash the normalised value: the same email or phone written differently hashes the same, under the key only', () => {
    const hash = (v: string, how: 'email' | 'phone' | 'name', key = KEY) => applyRule({ kind: 'hash' }, v, 'text', how, key);
    expect(hash(' Ann.Lee@Example.COM ', 'email')).toBe(hash('ann.lee@example.com', 'email'));
    expect(hash('(415) 555-0101', 'phone')).toBe(hash('415.555.0101', 'phone'));
    expect(hash('Ann  Marie ', 'name')).toBe(hash('ann marie', 'name'));
    expect(hash('4155550101', 'phone')).toMatch(/^[0-9a-f]{64}$/);
    expect(hash('4155550101', 'phone')).toBe(hmacHex(KEY, '4155550101'));
    // Without the key a guess cannot be checked: another key gives another hash, and a plain SHA-256 is not it.
    expect(hash('4155550101', 'phone', `${KEY}x`)).not.toBe(hash('4155550101', 'phone'));
    expect(normalised('Zoë', 'name')).toBe('zoë'.normalize('NFC'));
  });

  it('reduce a date or date-time to its year, and drop what is not one', () => {
    expect(applyRule({ kind: 'year' }, '1984-07-02', 'date', 'text', null)).toBe('1984-01-01');
    expect(applyRule({ kind: 'year' }, '1984-07-02T10:00:00', 'timestamp', 'text', null)).toBe('1984-01-01T00:00:00');
    // The column stores a date-time with an offset in UTC: the year is that value's.
    expect(applyRule({ kind: 'year' }, '1984-12-31T23:00:00-05:00', 'timestamp', 'text', null)).toBe('1985-01-01T00:00:00');
    expect(isRemoved(applyRule({ kind: 'year' }, 'soon', 'any', 'text', null))).toBe(true);
    expect(applyRule({ kind: 'prefix', length: 3 }, 'Zoë Lee', 'text', 'text', null)).toBe('Zoë');
  });

  it('fingerprint a key without revealing it', () => {
    expect(keyFingerprint(KEY)).toMatch(/^[0-9a-f]{16}$/);
    expect(keyFingerprint(KEY)).not.toContain(KEY.slice(0, 8));
    expect(keyFingerprint(`${KEY}x`)).not.toBe(keyFingerprint(KEY));
  });
});

describe('a source with policies', () => {
  const [source] = load(
    {
      privacy: { key: { env: 'PMSYNC_HASH_KEY' }, columns: 'personal:hash' },
      sources: [
        {
          ...core,
          privacy: {
            columns: { 'customers.birthday': 'year', 'customers.mobile_phone': 'drop', 'employees.first_name': 'keep' },
            raw: 'declared',
          },
        },
      ],
    },
    { PMSYNC_HASH_KEY: KEY },
  );
  const settings = settingsFor(source!, customers);

  it('lays its own section over the top level one', () => {
    expect(source!.privacy).toMatchObject({ key: KEY, personal: { kind: 'hash' }, raw: 'declared' });
    expect(source!.privacy!.columns['customers.birthday']).toEqual({ kind: 'year' });
    expect(settings.privacy!.stored).toMatchObject({
      columns: {
        first_name: { rule: 'hash', reads: ['FirstName'] },
        email: { rule: 'hash', reads: ['Email'] },
        mobile_phone: { rule: 'drop', reads: ['MobilePhone'] },
        birthday: { rule: 'year', reads: ['Birthday'] },
      },
      key: keyFingerprint(KEY),
    });
    expect(settings.privacy!.stored.raw).toContain('Email');
    expect(settings.privacy!.stored.raw).not.toContain('Notes');
    expect(JSON.stringify(settings.privacy!.stored)).not.toContain(KEY);
  });

  it('transforms a record before validation: a hashed email still maps, a dropped phone is null, undeclared fields are gone', () => {
    const { good, rejected } = validateRecords(customers, [customer], idReader('CustomerId'), { privacy: settings.privacy });
    expect(rejected).toEqual([]);
    const row = good[0]!;
    expect(row.columns).toMatchObject({
      email: hmacHex(KEY, 'ann.lee@example.com'),
      first_name: hmacHex(KEY, 'ann'),
      mobile_phone: null,
      birthday: '1984-01-01',
      last_visit: '2026-01-05',
      is_active: true,
    });
    expect(row.raw).toEqual({
      CustomerId: 'c1',
      CompanyId: 'co1',
      FirstName: hmacHex(KEY, 'ann'),
      LastName: hmacHex(KEY, 'lee'),
      Email: hmacHex(KEY, 'ann.lee@example.com'),
      IsActive: true,
      Birthday: '1984-01-01',
      LastVisit: '2026-01-05',
      ModifiedOn: '2026-02-01T10:00:00',
    });
    expect(customer.Email).toBe(' Ann.Lee@Example.com');
  });

  it('sets a record aside with the transformed copy, never the received one', () => {
    const bad = { ...customer, IsActive: 'yes' };
    const { rejected } = validateRecords(customers, [bad, 'Ann Lee, 415 555 0101'], idReader('CustomerId'), { privacy: settings.privacy });
    expect(JSON.stringify(rejected)).not.toMatch(/Ann|Lee|555|penicillin|1984-07-02/);
    expect(rejected.map((r) => r.reason)).toEqual([expect.stringContaining('IsActive'), expect.stringContaining('not a JSON object')]);
  });

  it('reaches nested fields and values of another shape where an object was expected', () => {
    const [p] = load(
      { sources: [{ ...pro, privacy: { key: KEY, columns: { personal: 'drop', 'pro_waitlist_entries.raw.patient.email': 'hash' } } }] },
      {},
    );
    const policy = settingsFor(p!, waitlist).privacy!;
    const entry = { waitlistId: 5, patient: { patientId: 9, firstName: 'Ann', lastName: 'Lee', email: 'A@x.org' }, comments: 'knee pain' };
    expect(transformRecord(policy, entry)).toEqual({ waitlistId: 5, patient: { patientId: 9, email: hmacHex(KEY, 'A@x.org') } });
    expect(transformRecord(policy, { waitlistId: 6, patient: 'Ann Lee' })).toEqual({ waitlistId: 6 });
    // The received record is left as it was, nested objects included.
    expect(entry).toEqual({
      waitlistId: 5,
      patient: { patientId: 9, firstName: 'Ann', lastName: 'Lee', email: 'A@x.org' },
      comments: 'knee pain',
    });
  });
});

describe('the privacy settings at start-up', () => {
  it('list every problem at once, saying what to write, and never the key', () => {
    const list = problems({
      privacy: { columns: { 'customer.email': 'hash', 'customers.emial': 'hash', personal: 'hsah' } },
      sources: [
        {
          ...core,
          privacy: {
            key: 'short-key-123',
            columns: {
              'customers.birthday': 'hash',
              'customers.raw.Email': 'drop',
              'customers.is_active': 'prefix:2',
              'pro_patients.dob': 'year',
              email: 'drop',
            },
          },
        },
        { ...pro, name: 'p2', privacy: { columns: 'personal:hash' } },
        { ...pro, name: 'p3', privacy: { columns: 'everything:drop' } },
      ],
    });
    const text = list.join('\n');
    expect(text).toContain('no table "customer" (did you mean "customers"?)');
    expect(text).toContain('customers has no column "emial" (did you mean "email"?)');
    expect(text).toContain('"hsah" is not a policy: use keep, drop, hash, year or prefix:N');
    expect(text).toContain('the hash key is 13 characters long: use at least 32');
    expect(text).toContain('"hash" applies to text columns only; customers.birthday is date: use "year", "drop" or "keep"');
    expect(text).toContain('Email is read by the column customers.email: name the column ("customers.email") instead');
    expect(text).toContain('"prefix:2" applies to text columns only; customers.is_active is boolean: use "drop" or "keep"');
    expect(text).toContain('no table "pro_patients"');
    expect(text).toContain('"email" must be written <table>.<column>');
    expect(text).toMatch(/source "p2".*"personal": "hash" does not fit pro_patients.dob \(date\)/);
    expect(text).toMatch(/source "p2".*"hash" needs a key/);
    expect(text).toContain('"everything:drop" must be a map of columns to policies, or "personal:<policy>"');
    expect(text).not.toContain('short-key-123');
  });

  it('accept a hash with a key from a file, and a source of another kind ignores top-level entries for tables it lacks', () => {
    const keyFile = writeConfig({}).replace(/pmsync\.json$/, 'hash.key');
    writeFileSync(keyFile, `${KEY}\n`);
    const sources = load({
      privacy: { key: { file: keyFile }, columns: { 'customers.email': 'hash', 'pro_patients.cell_phone': 'drop' } },
      sources: [core, pro],
    });
    expect(sources[0]!.privacy).toMatchObject({ key: KEY });
    expect(settingsFor(sources[1]!, waitlist).privacy!.stored).toEqual({ ...OPEN_STORED, raw: 'all' });
  });
});

describe('changing a policy', () => {
  const stored = (columns: StoredPolicy['columns'], extra: Partial<StoredPolicy> = {}): StoredPolicy => ({
    ...OPEN_STORED,
    columns,
    key: null,
    ...extra,
  });

  it('rewrites what is stricter and asks for the records again for what is looser', () => {
    const before = stored(
      { email: { rule: 'hash', reads: ['Email'] }, first_name: { rule: 'prefix:3', reads: ['FirstName'] } },
      { key: 'a' },
    );
    const after = stored(
      {
        email: { rule: 'hash', reads: ['Email'] },
        first_name: { rule: 'prefix:1', reads: ['FirstName'] },
        mobile_phone: { rule: 'drop', reads: ['MobilePhone'] },
      },
      { key: 'a', raw: ['CustomerId', 'Email'] },
    );
    expect(policyChange(before, after, 'customers')).toEqual({
      rewrite: { columns: ['first_name', 'mobile_phone'], paths: ['FirstName', 'MobilePhone'], prune: ['CustomerId', 'Email'] },
      looser: [],
    });
    const back = policyChange(after, before, 'customers');
    expect(back.rewrite).toEqual({ columns: [], paths: [], prune: null });
    expect(back.looser).toEqual([
      'customers.first_name: prefix:1 -> prefix:3',
      'customers.mobile_phone: drop -> keep',
      'customers raw: declared -> all',
    ]);
  });

  it('takes another key as a looser change of every hashed column', () => {
    const a = stored({ email: { rule: 'hash', reads: ['Email'] } }, { key: 'a' });
    const b = stored({ email: { rule: 'hash', reads: ['Email'] }, last_name: { rule: 'hash', reads: ['LastName'] } }, { key: 'b' });
    expect(policyChange(a, b, 'customers')).toEqual({
      rewrite: { columns: ['last_name'], paths: ['LastName'], prune: null },
      looser: ['customers.email: hashed with another key'],
    });
  });

  it('rewrites a raw field a remapped column now reads', () => {
    const a = stored({ email: { rule: 'hash', reads: ['Email'] } }, { key: 'a' });
    const b = stored({ email: { rule: 'hash', reads: ['Email', 'EmailAddress'] } }, { key: 'a' });
    expect(policyChange(a, b, 'customers').rewrite).toEqual({ columns: [], paths: ['EmailAddress'], prune: null });
  });
});
