import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { validateRecords, idReader } from '../../src/sync/page.ts';
import customers from '../../src/sync/streams/core/customers.ts';
import memberships from '../../src/sync/streams/core/memberships.ts';
import { toTimestamp } from '../../src/mappers/common.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/core/records.json', import.meta.url), 'utf8')) as Record<
  string,
  Array<Record<string, unknown>>
>;

describe('Core mappers on recorded records', () => {
  for (const stream of REST_STREAMS) {
    it(`${stream.resource}: maps every fixture, id exactly as received, columns matching its table`, () => {
      const records = fixtures[stream.resource];
      expect(records, `fixture for ${stream.resource}`).toBeDefined();
      for (const raw of records!) {
        const parsed = stream.raw.parse(raw);
        const row = stream.map(parsed);
        expect(row.id).toBe(raw[stream.idField]);
        expect(Object.keys(row.columns).sort()).toEqual(Object.keys(stream.table.columns).sort());
        expect(row.sourceModifiedAt).toBe(toTimestamp(raw.ModifiedOn as string));
        // passthrough: fields pmsync does not model are kept
        expect(parsed).toEqual(raw);
      }
    });
  }

  it('customers: typed columns for every field the spec names, nulls kept', () => {
    const [maria, sam] = fixtures.customers!.map((r) => customers.map(customers.raw.parse(r)));
    expect(maria!.columns).toEqual({
      company_id: 'Q29tcGFueS0x',
      first_name: 'Maria',
      last_name: 'Lopez',
      email: 'maria.lopez@example.com',
      mobile_phone: '+15555550123',
      is_active: true,
      birthday: '1988-04-12',
      last_visit: '2026-09-30',
    });
    expect(sam!.columns).toMatchObject({ company_id: null, email: null, is_active: false, birthday: null, last_visit: null });
  });

  it('memberships: bill amount as an exact decimal string, date-times reduced to dates', () => {
    const row = memberships.map(memberships.raw.parse(fixtures.memberships![0]));
    expect(row.columns).toMatchObject({
      membership_program: 'Glow Club Gold',
      bill_amount: '99.00',
      next_bill_date: '2026-12-01',
      last_bill_date: '2026-11-01',
    });
  });
});

describe('validation sets bad records aside with a reason', () => {
  const idOf = idReader('CustomerId');
  it('wrong types, missing ids and impossible dates', () => {
    const good = fixtures.customers![0]!;
    const { good: ok, rejected } = validateRecords(
      customers,
      [
        good,
        { ...good, CustomerId: 'x1', IsActive: 'yes' },
        { ...good, CustomerId: undefined },
        { ...good, CustomerId: 'x3', Birthday: '2026-02-30' },
        { ...good, CustomerId: 'x4', ModifiedOn: 'yesterday' },
        'not an object',
      ],
      idOf,
    );
    expect(ok.map((r) => r.id)).toEqual([good.CustomerId]);
    expect(rejected.map((r) => [r.recordId, r.reason])).toEqual([
      ['x1', expect.stringMatching(/^IsActive: .*boolean/)],
      ['x3', expect.stringMatching(/^Birthday: expected a date/)],
      ['x4', expect.stringMatching(/^ModifiedOn: expected a date-time/)],
      [null, expect.stringMatching(/^CustomerId: /)],
      [null, expect.stringMatching(/object/)],
    ]);
  });
});

describe('toTimestamp', () => {
  it('keeps zone-less wall-clock times and converts zoned ones to UTC', () => {
    expect(toTimestamp('2026-11-03T09:30:00')).toBe('2026-11-03T09:30:00');
    expect(toTimestamp('2026-11-03T09:30:00.123')).toBe('2026-11-03T09:30:00.123');
    expect(toTimestamp('2026-11-03T09:30:00+02:00')).toBe('2026-11-03T07:30:00.000');
    expect(toTimestamp('2026-11-03')).toBe('2026-11-03T00:00:00');
    expect(toTimestamp(null)).toBeNull();
  });
});
