/**
 * Schema drift on a real PostgreSQL, with the simulator playing a server that
 * renames fields: the report is collected by ordinary runs, stored, logged
 * once per change, shown by status and /metrics; a `columns` override plus
 * repopulate fixes the rows already stored without an API request; and
 * repopulate's SQL derives exactly what the mappers derive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whileReading } from '../../src/queue.ts';
import { collectStatus } from '../../src/status/detail.ts';
import type { Config, RestSourceConfig } from '../../src/config/schema.ts';
import { withTransaction } from '../../src/db/pool.ts';
import { repopulateTable } from '../../src/db/repopulate.ts';
import { Metrics } from '../../src/metrics.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { driftCounts } from '../../src/state/drift.ts';
import { acceptDrift, refreshDrift } from '../../src/sync/drift-record.ts';
import { idReader, writePage } from '../../src/sync/page.ts';
import { runStream } from '../../src/sync/run-stream.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { effectiveFields, settingsFor } from '../../src/sync/table-settings.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, loadTestConfig, openTestApp, type TestApp } from '../support/harness.ts';

const TENANT = { apikey: 'drift-key-Xa1', username: 'drift.user', password: 'drift-pass-Yb2', variant: 'core' as const };
const SIZES = { appointments: 60, companies: 3, customers: 40, orders: 50, employees: 5, services: 5 };

let sim: Simulator;
let db: TestDatabase;
let app: TestApp;
let config: Config;
let source: RestSourceConfig;

const stream = (resource: string) => REST_STREAMS.find((s) => s.resource === resource)!;
const tenant = () => sim.tenant(TENANT.apikey);

async function findings(table: string): Promise<string[]> {
  const res = await db.pool.query<{ kind: string; subject: string }>(
    "SELECT kind, subject FROM pmsync.schema_drift WHERE source = 'clinic' AND table_name = $1 ORDER BY kind, subject",
    [table],
  );
  return res.rows.map((r) => `${r.kind} ${r.subject}`);
}

const driftLogs = (text: string) => app.logs.filter((l) => l.includes(text));

function withColumns(columns: Record<string, string>): RestSourceConfig {
  return loadTestConfig(db.url, [coreEntry(sim, 'clinic', TENANT, { lagSeconds: 0, columns })]).sources[0] as RestSourceConfig;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 9, tenants: [{ ...TENANT, sizes: SIZES }] });
  db = await createTestDatabase();
  config = loadTestConfig(db.url, [coreEntry(sim, 'clinic', TENANT, { lagSeconds: 0 })]);
  source = config.sources[0] as RestSourceConfig;
  app = await openTestApp(config);
});
afterAll(async () => {
  await app?.close();
  await sim?.close();
  await db?.drop();
});

describe('schema drift through ordinary runs', () => {
  it('reports only the fields no column reads while the server sends what pmsync expects', async () => {
    for (const r of ['companies', 'appointments', 'orders']) await runStream(app.ctx, source, stream(r));
    expect(await findings('appointments')).toEqual(['unmapped_field CreatedOn']);
    expect(await findings('companies')).toEqual(['unmapped_field CreatedOn']);
    // What a table's first records carry is its baseline, not drift: no info line on a first sync.
    expect(driftLogs('schema drift: clinic/appointments: CreatedOn')).toHaveLength(0);
    expect(driftLogs('schema drift: clinic/companies: CreatedOn')).toHaveLength(0);
  });

  it('finds the empty column and its likely field when the server renames it, and logs that once', async () => {
    tenant().renameFields('appointments', { StartDateTime: 'StartTime' });
    await runStream(app.ctx, source, stream('appointments'), { full: true });
    expect(await findings('appointments')).toEqual([
      'disappeared_field StartDateTime',
      'empty_column start_at',
      'unmapped_field CreatedOn',
      'unmapped_field StartTime',
    ]);
    // A field that appears later is a change: said once, at info level.
    expect(driftLogs('schema drift: clinic/appointments: StartTime')).toHaveLength(1);
    expect(driftLogs('schema drift: clinic/appointments: StartTime')[0]).toMatch(/"level":"info"/);
    const nulls = await db.pool.query("SELECT count(*)::int AS n FROM appointments WHERE source = 'clinic' AND start_at IS NULL");
    expect(nulls.rows[0].n).toBe(60);
    await runStream(app.ctx, source, stream('appointments'), { full: true });
    expect(driftLogs('schema drift: clinic/appointments: start_at is null')).toHaveLength(1);
    expect(
      driftLogs('schema drift: clinic/appointments: StartDateTime (read into start_at) was in no record of the last full pass'),
    ).toHaveLength(1);
    expect(app.logs.find((l) => l.includes('start_at is null'))).toMatch(/"level":"warn"/);
  });

  it('shows the report in status and in /metrics', async () => {
    const [status] = await whileReading(app, () => collectStatus(app, config));
    const appointments = status!.resources.find((r) => r.resource === 'appointments')!;
    expect(appointments.drift!.map((f) => `${f.kind} ${f.subject}`)).toEqual([
      'empty_column start_at',
      'disappeared_field StartDateTime',
      'unmapped_field CreatedOn',
      'unmapped_field StartTime',
    ]);
    expect(appointments.drift![0]!.detail).toMatch(/set "columns": \{ "appointments\.start_at": "StartTime" \}/);

    const metrics = new Metrics({ sources: async () => [], running: () => [] });
    metrics.watchDrift(() => driftCounts(db.pool));
    const { body } = await metrics.render();
    expect(body).toContain('pmsync_schema_drift_findings{source="clinic",table="appointments",kind="empty_column"} 1');
    expect(body).toContain('pmsync_schema_drift_findings{source="clinic",table="appointments",kind="unmapped_field"} 2');
  });

  it('a columns override fixes new pages, and repopulate the stored rows, with no request', async () => {
    const fixed = withColumns({ 'appointments.start_at': 'StartTime' });
    const settings = settingsFor(fixed, stream('appointments'));
    const requests = sim.stats().requests.length;
    const changed = await withTransaction(db.pool, (tx) =>
      repopulateTable(tx, stream('appointments').table, effectiveFields(stream('appointments'), settings), 'clinic'),
    );
    expect(changed).toEqual({ rows: 60, versions: 0 });
    expect(sim.stats().requests.length).toBe(requests);
    const served = new Map(
      tenant()
        .list('appointments')
        .map((a) => [String(a.AppointmentId), String(a.StartTime)]),
    );
    const stored = await db.pool.query<{ id: string; start: string }>(
      "SELECT id, to_char(start_at, 'YYYY-MM-DD\"T\"HH24:MI:SS') AS start FROM appointments WHERE source = 'clinic'",
    );
    for (const r of stored.rows) expect(r.start, r.id).toBe(served.get(r.id));

    await refreshDrift(db.pool, app.logger, { source: 'clinic', stream: stream('appointments'), settings });
    expect(await findings('appointments')).toEqual(['disappeared_field StartDateTime', 'unmapped_field CreatedOn']);
    expect(driftLogs('schema drift resolved: clinic/appointments: start_at is null')).toHaveLength(1);

    const moved = tenant().list('appointments')[0]!;
    tenant().update('appointments', String(moved.AppointmentId), { StartDateTime: '2027-01-04T08:00:00' });
    await runStream(app.ctx, fixed, stream('appointments'));
    const row = await db.pool.query("SELECT start_at::text AS start FROM appointments WHERE source = 'clinic' AND id = $1", [
      moved.AppointmentId,
    ]);
    expect(row.rows[0].start).toBe('2027-01-04 08:00:00');

    await acceptDrift(db.pool, app.logger, { source: 'clinic', stream: stream('appointments'), settings });
    expect(await findings('appointments')).toEqual(['unmapped_field CreatedOn']);
  });

  it('reports a field whose JSON type changed until it is accepted', async () => {
    const [first, second] = tenant().list('orders');
    tenant().update('orders', String(first!.OrderId), { Total: '12.50' });
    tenant().update('orders', String(second!.OrderId), { Total: '99.00' });
    await runStream(app.ctx, source, stream('orders'));
    expect(await findings('orders')).toEqual(['type_changed Total', 'unmapped_field CreatedOn']);
    expect(driftLogs('schema drift: clinic/orders: Total was number, the last run saw string')).toHaveLength(1);
    await acceptDrift(db.pool, app.logger, { source: 'clinic', stream: stream('orders'), settings: settingsFor(source, stream('orders')) });
    expect(await findings('orders')).toEqual(['unmapped_field CreatedOn']);
  });
});

describe('repopulate', () => {
  it('derives in SQL exactly what the mappers derive, so a table synced with the defaults does not change', async () => {
    tenant().renameFields('appointments', {});
    for (const s of REST_STREAMS) await runStream(app.ctx, source, s, { full: true });
    // Values the simulator does not produce: zones, date-times in date fields, string decimals, nulls.
    const edge = [
      {
        AppointmentId: 'edge-1',
        StartDateTime: '2026-11-03T09:30:00.123+02:00',
        EndDateTime: '2026-11-03 10:15',
        CompanyId: null,
        ModifiedOn: '2026-10-02T00:00:00Z',
      },
      { AppointmentId: 'edge-2', StartDateTime: '2026-11-03', EndDateTime: '2026-11-03T10:15:00.5', ModifiedOn: '2026-10-02T00:00:00' },
    ];
    await withTransaction(db.pool, (tx) =>
      writePage(tx, stream('appointments'), edge, {
        source: 'clinic',
        runId: null,
        sentAt: new Date(),
        markSeen: false,
        idOf: idReader('AppointmentId'),
      }),
    );
    const memberships = [
      {
        MembershipId: 'edge-m',
        BillAmount: '99.00',
        NextBillDate: '2026-12-01T00:00:00',
        LastBillDate: '2026-11-01',
        SoldOn: null,
        ModifiedOn: '2026-10-02T00:00:00',
      },
      { MembershipId: 'edge-n', BillAmount: 49.5, NextBillDate: '2026-12-01T08:00:00-05:00', ModifiedOn: '2026-10-02T00:00:00' },
    ];
    await withTransaction(db.pool, (tx) =>
      writePage(tx, stream('memberships'), memberships, {
        source: 'clinic',
        runId: null,
        sentAt: new Date(),
        markSeen: false,
        idOf: idReader('MembershipId'),
      }),
    );
    for (const s of REST_STREAMS) {
      const changed = await withTransaction(db.pool, (tx) => repopulateTable(tx, s.table, s.fields, 'clinic'));
      expect(changed, s.table.name).toEqual({ rows: 0, versions: 0 });
    }
    const count = await db.pool.query("SELECT count(*)::int AS n FROM appointments WHERE source = 'clinic' AND start_at IS NOT NULL");
    expect(count.rows[0].n).toBe(62);
  });
});
