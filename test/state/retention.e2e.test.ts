/**
 * Retention: after a sync, quarantined payloads, drift findings, webhook
 * event rows and closed history versions past their configured age are
 * deleted, recent ones and current versions stay, and `status` says what the
 * purge removed. The CLI runs as a real process against the simulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, TestClock } from '../support/harness.ts';

const TENANT = { apikey: 'ret-key-K7', username: 'ret.user', password: 'ret-pass-M3', variant: 'core' as const };
const clock = new TestClock('2026-06-01T10:00:00Z');
let sim: Simulator;
let db: TestDatabase;
let file: string;

const cli = (...args: string[]) =>
  runCli([...args, '--config', file], cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso(), LOG_LEVEL: 'info' }));

async function count(sql: string): Promise<number> {
  return (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`)).rows[0]!.n;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 8, now: clock.now, tenants: [{ ...TENANT, sizes: { customers: 60, orders: 10 } }] });
  db = await createTestDatabase({ migrate: false });
  file = writeConfig({
    sources: [coreEntry(sim, 'clinic', TENANT, { streams: ['customers', 'orders'], history: ['customers'] })],
    retention: { quarantineDays: 30, driftDays: 60, historyDays: 30 },
    webhooks: { eventRetentionDays: 7 },
  });
  expect((await cli('sync')).code).toBe(0);
  sim.tenant(TENANT.apikey).touch('customers', 6);
  clock.advance(3_600_000);
  expect((await cli('sync')).code).toBe(0);
}, 300_000);

afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('retention', () => {
  it('deletes what is past its age after a sync, keeps the rest, and status says what it removed', async () => {
    // Six closed versions; three of them made old.
    expect(await count(`customers_history WHERE source = 'clinic' AND NOT is_current`)).toBe(6);
    await db.pool.query(
      `UPDATE customers_history SET valid_from = valid_from - interval '40 days', valid_to = valid_to - interval '40 days'
       WHERE (source, id, valid_from) IN (SELECT source, id, valid_from FROM customers_history WHERE NOT is_current ORDER BY id LIMIT 3)`,
    );
    const current = await count(`customers_history WHERE is_current`);
    await db.pool.query(
      `INSERT INTO pmsync.quarantine (source, resource, record_id, raw, reason, first_seen_at, last_seen_at) VALUES
         ('clinic', 'customers', 'old', '{"FirstName": "Old Patient"}', 'bad', now() - interval '45 days', now() - interval '45 days'),
         ('clinic', 'customers', 'new', '{"FirstName": "New Patient"}', 'bad', now(), now())`,
    );
    await db.pool.query(
      `INSERT INTO pmsync.schema_drift (source, table_name, kind, subject, signature, detail, first_seen_at, updated_at) VALUES
         ('clinic', 'customers', 'unmapped_field', 'Old', 's', 'd', now() - interval '90 days', now() - interval '90 days'),
         ('clinic', 'customers', 'unmapped_field', 'New', 's', 'd', now(), now())`,
    );
    await db.pool.query(
      `INSERT INTO pmsync.webhook_events (source, event_id, event_type, tenant_id, application, url, outcome, received_at, last_received_at) VALUES
         ('clinic', 'e-old', 'Patient.Updated', 't', 'a', 'customers/x', 'stored', now() - interval '8 days', now() - interval '8 days'),
         ('clinic', 'e-new', 'Patient.Updated', 't', 'a', 'customers/y', 'stored', now(), now())`,
    );

    const synced = await cli('sync');
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toMatch(
      /retention: removed 1 quarantined payload\(s\), 1 drift finding\(s\), 1 webhook event\(s\), 3 closed history version\(s\)/,
    );
    expect(await count(`pmsync.quarantine WHERE record_id = 'old'`)).toBe(0);
    expect(await count(`pmsync.quarantine WHERE record_id = 'new'`)).toBe(1);
    expect(await count(`pmsync.schema_drift WHERE subject = 'Old'`)).toBe(0);
    expect(await count(`pmsync.schema_drift WHERE subject = 'New'`)).toBe(1);
    expect(await count(`pmsync.webhook_events WHERE event_id = 'e-old'`)).toBe(0);
    expect(await count(`pmsync.webhook_events WHERE event_id = 'e-new'`)).toBe(1);
    expect(await count(`customers_history WHERE source = 'clinic' AND NOT is_current`)).toBe(3);
    expect(await count(`customers_history WHERE is_current`)).toBe(current);

    const status = await cli('status', '--source', 'clinic');
    expect(status.stdout).toMatch(
      /retention: quarantined payloads 30 days, drift findings 60 days, webhook events 7 days, closed history versions 30 days; last purge .* removed 1 quarantined, 1 drift, 1 webhook event, 3 history row\(s\)/,
    );
  });

  it('refuses a retention setting it does not know, naming it', async () => {
    const bad = writeConfig({ sources: [coreEntry(sim, 'clinic', TENANT)], retention: { quarantinDays: 3 } });
    const res = await runCli(['status', '--config', bad], cliEnv({ DATABASE_URL: db.url }));
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/retention: unknown key "quarantinDays" \(did you mean "quarantineDays"\?\)/);
  });
});
