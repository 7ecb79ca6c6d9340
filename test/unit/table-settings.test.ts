/**
 * The per-source table settings: `columns` overrides and `history`, checked at
 * start-up with errors that say what to write, and applied to records without
 * touching what is stored in raw.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type SourceConfig } from '../../src/config/schema.ts';
import { configProblems } from '../support/config-problems.ts';
import { validateRecords, idReader } from '../../src/sync/page.ts';
import appointments from '../../src/sync/streams/core/appointments.ts';
import { REST_STREAMS, PRO_STREAMS } from '../../src/sync/streams/index.ts';
import { remap, settingsFor, tableStreams } from '../../src/sync/table-settings.ts';
import { writeConfig } from '../support/cli.ts';

const core = { name: 'clinic', kind: 'core', baseUrl: 'https://h/api/v1', apikey: 'k', username: 'u', password: 'p' };
const subset = { name: 'uptown', kind: 'subset', baseUrl: 'https://h/CustomAPI/UP/api/v1', apikey: 'k', username: 'u', password: 'p' };
const pro = { name: 'practice', kind: 'pro', baseUrl: 'https://pro.example.com', practiceId: 7, token: 't' };

function load(sources: unknown[]): SourceConfig[] {
  return loadConfig(STREAM_REGISTRY, { configFile: writeConfig({ sources }), env: {} }).sources;
}

function problems(sources: unknown[]): string[] {
  return configProblems(() => load(sources));
}

describe('columns and history in the config file', () => {
  it('accept tables and columns of the source kind, with empty defaults', () => {
    const [a, b, c] = load([
      {
        ...core,
        columns: { 'appointments.start_at': 'StartTime', 'companies.company_name': 'Name' },
        history: ['customers', 'memberships'],
      },
      subset,
      { ...pro, columns: { 'pro_appointments.appt_date': 'date' }, history: ['pro_patients'] },
    ]);
    expect(a).toMatchObject({ columns: { 'appointments.start_at': 'StartTime' }, history: ['customers', 'memberships'] });
    expect(b).toMatchObject({ columns: {}, history: [] });
    expect(c).toMatchObject({ history: ['pro_patients'] });
  });

  it('list every unknown table and column at once, naming the ones that exist', () => {
    const list = problems([
      {
        ...core,
        columns: {
          'appointment.start_at': 'StartTime',
          'appointments.start': 'StartTime',
          start_at: 'StartTime',
          'customers.email': ' Mail',
        },
        history: ['customer'],
      },
      { ...subset, history: ['customers'] },
      { ...pro, columns: { 'pro_appointments.patient_id': 'patient' } },
    ]).join('\n');
    expect(list).toContain(
      'source "clinic" (sources[0]): columns: "appointment.start_at": no table "appointment" for a core source; tables: companies, membership_programs, customers, appointments',
    );
    expect(list).toMatch(
      /columns: "appointments\.start": "start" is not a typed column of it; columns that can be remapped: company_id, customer_id, employee_id, service_id, start_at, end_at/,
    );
    expect(list).toMatch(/columns: "start_at" must be written <table>\.<column>/);
    expect(list).toMatch(/columns: "customers\.email": " Mail" must be the name of a top-level field .* e\.g\. "Email"/);
    expect(list).toMatch(/history: "customer": no table "customer" for a core source/);
    expect(list).toMatch(
      /source "uptown" \(sources\[1\]\): history: "customers": no table "customers" for a subset source; tables: companies, appointments, orders, services, employees/,
    );
    expect(list).toMatch(
      /"pro_appointments\.patient_id": "patient_id" is not read from one top-level raw field, so it cannot be remapped; columns that can be remapped: event_type_id, provider_id, appt_date/,
    );
  });
});

describe('column overrides', () => {
  it('apply only to the table they name', () => {
    const [source] = load([{ ...core, columns: { 'appointments.start_at': 'StartTime' } }]);
    expect(settingsFor(source!, appointments)).toEqual({
      history: false,
      overrides: [{ column: 'start_at', defaultField: 'StartDateTime', field: 'StartTime' }],
    });
    expect(
      settingsFor(
        source!,
        REST_STREAMS.find((s) => s.resource === 'customers')!,
      ).overrides,
    ).toEqual([]);
  });

  it('feed the mapper the configured field, validated as the default one, and keep raw as received', () => {
    const overrides = [{ column: 'start_at', defaultField: 'StartDateTime', field: 'StartTime' }];
    const records = [
      { AppointmentId: 'a1', StartDateTime: null, StartTime: '2026-11-03T09:30:00' },
      { AppointmentId: 'a2', StartTime: 'soon' },
      { AppointmentId: 'a3', StartDateTime: '2026-11-03T09:30:00' },
    ];
    const { good, rejected } = validateRecords(appointments, records, idReader('AppointmentId'), { overrides });
    expect(good.map((g) => [g.id, g.columns.start_at])).toEqual([
      ['a1', '2026-11-03T09:30:00'],
      ['a3', null],
    ]);
    expect(good[0]!.raw).toBe(records[0]);
    expect(rejected).toEqual([{ recordId: 'a2', raw: records[1], reason: 'StartDateTime: expected a date-time YYYY-MM-DDThh:mm:ss' }]);
    expect(remap(records[0], [])).toBe(records[0]);
  });
});

describe('stream field declarations', () => {
  // Each declared field must be the one the mapper reads for that column.
  const sample: Record<string, unknown> = {
    text: 'x',
    boolean: true,
    date: '2026-01-02',
    timestamp: '2026-01-02T03:04:05',
    numeric: 12.5,
    integer: 7,
    bigint: 9,
    jsonb: [1, 2],
  };
  for (const stream of [...REST_STREAMS, ...PRO_STREAMS.filter((s) => s.kind !== 'pro-snapshot')] as Array<(typeof REST_STREAMS)[number]>) {
    it(`${stream.table.name}: every declared field fills its column and nothing else`, () => {
      const idField = 'idField' in stream ? stream.idField : '';
      const base = { [idField]: idField.endsWith('Id') && stream.table.idType === 'bigint' ? 5 : 'id-1' };
      for (const [column, field] of Object.entries(stream.fields)) {
        const type = stream.table.columns[column]!;
        expect(type, `${column} is a typed column`).toBeDefined();
        const row = stream.map(stream.raw.parse({ ...base, [field]: sample[type] }));
        const filled = Object.entries(row.columns)
          .filter(([, v]) => v !== null)
          .map(([c]) => c);
        expect(filled, `${stream.table.name}.${column} from ${field}`).toEqual([column]);
      }
    });
  }

  it('cover every typed column a Core table has', () => {
    for (const s of REST_STREAMS) expect(Object.keys(s.fields).sort(), s.table.name).toEqual(Object.keys(s.table.columns).sort());
  });

  it('tableStreams lists the tables a source kind writes', () => {
    const [c, s, p] = load([core, subset, pro]);
    expect(tableStreams(c!)).toHaveLength(10);
    expect(tableStreams(s!).map((x) => x.table.name)).toEqual(['companies', 'appointments', 'orders', 'services', 'employees']);
    expect(tableStreams(p!).map((x) => x.table.name)).toEqual([
      'pro_patients',
      'pro_event_types',
      'pro_appointments',
      'pro_waitlist_slots',
      'pro_waitlist_entries',
    ]);
  });
});
