/**
 * The schema-drift report's pure parts: what an observer counts, how a run
 * merges into the stored state, and which findings the state yields.
 */
import { describe, expect, it } from 'vitest';
import {
  DriftObserver,
  driftReport,
  mergeObservation,
  nameWords,
  personalLooking,
  RECENT_RECORDS,
  sharedWords,
} from '../../src/sync/drift.ts';
import type { ColumnState, FieldState } from '../../src/state/drift.ts';
import appointments from '../../src/sync/streams/core/appointments.ts';
import companies from '../../src/sync/streams/core/companies.ts';
import orders from '../../src/sync/streams/core/orders.ts';
import type { StreamBase } from '../../src/sync/types.ts';

const T0 = '2026-11-01T00:00:00.000Z';
const T1 = '2026-11-02T00:00:00.000Z';

function observe(stream: StreamBase, records: unknown[]): DriftObserver {
  const obs = new DriftObserver();
  for (const r of records) {
    obs.record(r);
    const parsed = stream.raw.safeParse(r);
    if (parsed.success) obs.row(stream.map(parsed.data).columns);
  }
  return obs;
}

function run(
  stream: StreamBase,
  records: Array<Record<string, unknown>>,
  state = { fields: [] as FieldState[], columns: [] as ColumnState[] },
  fullPass = false,
  now = T1,
) {
  return mergeObservation(state.fields, state.columns, observe(stream, records), Object.keys(stream.table.columns), fullPass, now);
}

const report = (stream: StreamBase, state: { fields: FieldState[]; columns: ColumnState[] }, effective = stream.fields) =>
  driftReport('clinic', stream, effective, state.fields, state.columns).map((f) => `${f.kind} ${f.subject}`);

function appointment(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    AppointmentId: `a${i}`,
    CompanyId: 'c1',
    CustomerId: `u${i}`,
    EmployeeId: 'e1',
    ServiceId: 's1',
    StartDateTime: '2026-11-03T09:30:00',
    EndDateTime: '2026-11-03T10:00:00',
    CreatedOn: '2026-10-01T00:00:00',
    ModifiedOn: '2026-10-02T00:00:00',
    ...extra,
  };
}

/** The appointment as a server that names the start and end differently sends it. */
function renamed(i: number): Record<string, unknown> {
  const { StartDateTime, EndDateTime, ...rest } = appointment(i);
  return { ...rest, StartTime: StartDateTime, EndTime: EndDateTime };
}

const many = (n: number, make: (i: number) => Record<string, unknown>) => Array.from({ length: n }, (_, i) => make(i));

describe('names', () => {
  it('split any casing into words', () => {
    expect(nameWords('StartDateTime')).toEqual(['start', 'date', 'time']);
    expect(nameWords('start_at')).toEqual(['start', 'at']);
    expect(nameWords('HTTPStatusCode')).toEqual(['http', 'status', 'code']);
  });

  it('count the words a candidate shares with the column or its default field, generic ones aside', () => {
    expect(sharedWords('StartTime', 'start_at', 'StartDateTime')).toBe(2);
    expect(sharedWords('Name', 'company_name', 'CompanyName')).toBe(1);
    expect(sharedWords('EMailAddress', 'email', 'Email')).toBe(1);
    expect(sharedWords('LocationId', 'company_id', 'CompanyId')).toBe(0);
    expect(sharedWords('Notes', 'start_at', 'StartDateTime')).toBe(0);
  });
});

describe('the observer', () => {
  it('counts fields, their non-null JSON types, and filled columns', () => {
    const obs = observe(orders, [
      { OrderId: 'o1', Total: 10, Notes: null },
      { OrderId: 'o2', Total: '12.50', Tags: ['a'] },
      { OrderId: 'o3', Total: 'lots' },
      'not a record',
    ]);
    expect(obs.records).toBe(3);
    expect(obs.mapped).toBe(2);
    expect(obs.fields.get('Total')).toEqual({ present: 3, nonNull: 3, types: new Set(['number', 'string']) });
    expect(obs.fields.get('Notes')).toEqual({ present: 1, nonNull: 0, types: new Set() });
    expect(obs.fields.get('Tags')!.types).toEqual(new Set(['array']));
    expect(obs.filled.get('total')).toBe(2);
    expect(obs.filled.get('order_date')).toBeUndefined();
  });
});

describe('the report', () => {
  it('lists only fields no column reads when the server sends what pmsync expects', () => {
    const state = run(
      appointments,
      many(30, (i) => appointment(i)),
      undefined,
      true,
    );
    expect(report(appointments, state)).toEqual(['unmapped_field CreatedOn']);
  });

  it('finds a column left empty while raw has a field named like it, and the field that disappeared', () => {
    let state = run(
      appointments,
      many(30, (i) => appointment(i)),
      undefined,
      false,
      T0,
    );
    state = run(appointments, many(RECENT_RECORDS - 1, renamed), state);
    // Not yet: fewer than RECENT_RECORDS rows in a row, and no full pass.
    expect(report(appointments, state)).toEqual(['unmapped_field CreatedOn', 'unmapped_field EndTime', 'unmapped_field StartTime']);
    state = run(appointments, many(1, renamed), state);
    expect(report(appointments, state)).toEqual([
      'empty_column end_at',
      'empty_column start_at',
      'disappeared_field EndDateTime',
      'disappeared_field StartDateTime',
      'unmapped_field CreatedOn',
      'unmapped_field EndTime',
      'unmapped_field StartTime',
    ]);
    const [start] = driftReport('clinic', appointments, appointments.fields, state.fields, state.columns).filter(
      (f) => f.subject === 'start_at',
    );
    expect(start).toMatchObject({ signature: 'StartTime' });
    expect(start!.detail).toContain(
      'set "columns": { "appointments.start_at": "StartTime" } for source clinic, then run pmsync repopulate --source clinic --table appointments',
    );

    // With the override configured, the field is read and the column is not reported empty.
    const effective = { ...appointments.fields, start_at: 'StartTime', end_at: 'EndTime' };
    expect(report(appointments, state, effective)).toEqual([
      'disappeared_field EndDateTime',
      'disappeared_field StartDateTime',
      'unmapped_field CreatedOn',
    ]);
  });

  it('tells at the end of one full pass, however small the table', () => {
    let state = run(companies, [{ CompanyId: 'c1', CompanyName: 'Glow', IsActive: true }], undefined, true, T0);
    state = run(companies, [{ CompanyId: 'c1', Name: 'Glow', IsActive: true }], state, true);
    expect(report(companies, state)).toEqual(['empty_column company_name', 'disappeared_field CompanyName', 'unmapped_field Name']);
  });

  it('does not suggest a field of the wrong type or an unrelated name', () => {
    let state = run(
      appointments,
      many(25, (i) => ({ ...appointment(i), StartDateTime: null, StartFlag: true, Notes: 'text' })),
      undefined,
      true,
    );
    expect(report(appointments, state).filter((f) => f.startsWith('empty_column'))).toEqual([]);
    state = run(
      appointments,
      many(25, (i) => ({ ...appointment(i), StartDateTime: null, BeginsAt: '2026-11-03T09:30:00' })),
      undefined,
      true,
    );
    expect(report(appointments, state).filter((f) => f.startsWith('empty_column'))).toEqual([]);
  });

  it('reports a changed JSON type with the same signature while counts move', () => {
    let state = run(
      orders,
      many(5, (i) => ({ OrderId: `o${i}`, Total: 10 + i })),
      undefined,
      false,
      T0,
    );
    state = run(
      orders,
      many(3, (i) => ({ OrderId: `o${i}`, Total: `${10 + i}.00` })),
      state,
    );
    const first = driftReport('clinic', orders, orders.fields, state.fields, state.columns).find((f) => f.kind === 'type_changed');
    expect(first).toMatchObject({ subject: 'Total', signature: 'number>string' });
    expect(first!.detail).toMatch(/^Total was number, the last run saw string/);
    state = run(
      orders,
      many(7, (i) => ({ OrderId: `o${i}`, Total: `${i}.00` })),
      state,
    );
    expect(
      driftReport('clinic', orders, orders.fields, state.fields, state.columns).find((f) => f.kind === 'type_changed')!.signature,
    ).toBe('number>string');
  });

  it('does not call a sparse field gone, nor a field only ever null typed', () => {
    let state = run(
      orders,
      [{ OrderId: 'o1', Total: 1, Coupon: 'X', Memo: null }, ...many(9, (i) => ({ OrderId: `p${i}`, Total: 2, Memo: null }))],
      undefined,
      false,
      T0,
    );
    state = run(
      orders,
      many(30, (i) => ({ OrderId: `q${i}`, Total: 3, Memo: 'note' })),
      state,
    );
    expect(report(orders, state).filter((f) => !f.startsWith('unmapped'))).toEqual([]);
    expect(state.fields.find((f) => f.field === 'Memo')).toMatchObject({ baselineTypes: ['string'], lastTypes: ['string'] });
  });

  it('flags a new field whose name looks like personal data until a policy names it, saying whether raw keeps it', () => {
    expect(
      ['HomePhone', 'GuardianName', 'date_of_birth', 'StreetAddress', 'ClinicalNotes', 'CreatedOn', 'Coupon'].map((f) =>
        personalLooking(f),
      ),
    ).toEqual(['contact', 'related person', 'birth date', 'address', 'health or free text', null, null]);
    expect(personalLooking('Name')).toBeNull();
    expect([personalLooking('Name', true), personalLooking('PatientName'), personalLooking('first_name')]).toEqual([
      'name',
      'name',
      'name',
    ]);
    const state = run(
      orders,
      many(5, (i) => ({ OrderId: `o${i}`, Total: 1, HomePhone: '555 0101', Coupon: 'X' })),
    );
    const kinds = (privacy?: { named: string[]; declaredOnly: boolean }) =>
      driftReport('clinic', orders, orders.fields, state.fields, state.columns, privacy).map(
        (f) => `${f.kind} ${f.subject} ${f.signature}`,
      );
    expect(kinds()).toEqual(['personal_field HomePhone kept', 'unmapped_field Coupon unmapped']);
    const kept = driftReport('clinic', orders, orders.fields, state.fields, state.columns)[0]!;
    expect(kept.detail).toContain('looks like personal data (contact) and is stored in raw as received');
    expect(kept.detail).toContain('"orders.raw.HomePhone": "drop", "hash" or "keep"');
    expect(JSON.stringify(kept)).not.toContain('555 0101');
    expect(kinds({ named: [], declaredOnly: true })).toEqual(['personal_field HomePhone not kept', 'unmapped_field Coupon not kept']);
    // Named by a policy (even keep): reviewed.
    expect(kinds({ named: ['HomePhone'], declaredOnly: true })).toEqual([
      'unmapped_field Coupon not kept',
      'unmapped_field HomePhone unmapped',
    ]);
  });
});
