/**
 * Resource and table names differ (`giftcertificates` writes
 * `gift_certificates`, a Pro source's `patients` writes `pro_patients`):
 * every command takes either. The real CLI runs against a migrated database;
 * nothing here reaches an API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { finishRun, startRun } from '../../src/state/runs.ts';
import { resourceNamed, resourceOfTable, selectProStreams, selectRestStreams, tableNamed } from '../../src/sync/streams/index.ts';
import type { ProSourceConfig } from '../../src/config/schema.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let file: string;

beforeAll(async () => {
  db = await createTestDatabase();
  file = writeConfig({
    sources: [
      { name: 'clinic', kind: 'core', baseUrl: 'http://127.0.0.1:9/api/v1', apikey: 'names-key', username: 'u', password: 'p' },
      { name: 'pro_c', kind: 'pro', baseUrl: 'http://127.0.0.1:9', practiceId: 7, token: 'names-token' },
    ],
  });
  const run = await startRun(db.pool, {
    source: 'clinic',
    resource: 'giftcertificates',
    mode: 'incremental',
    purpose: 'check',
    windowStart: null,
    windowEnd: null,
  });
  await finishRun(db.pool, run, 'succeeded', { requests: 1 });
});
afterAll(async () => db.drop());

const cli = (...args: string[]) => runCli([...args, '--config', file], cliEnv({ DATABASE_URL: db.url }));

describe('resource and table names', () => {
  it('mean the same stream for a source', () => {
    const [core, pro] = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } }).sources;
    expect(resourceNamed(core!, 'gift_certificates')).toBe('giftcertificates');
    expect(resourceNamed(core!, 'giftcertificates')).toBe('giftcertificates');
    expect(resourceNamed(pro!, 'pro_patients')).toBe('patients');
    expect(tableNamed(core!, 'membershipprograms')).toBe('membership_programs');
    expect(tableNamed(pro!, 'waitlist')).toBe('pro_waitlist_entries');
    expect(tableNamed(core!, 'pro_patients')).toBeUndefined();
    expect(resourceOfTable('gift_certificates')).toBe('giftcertificates');
    expect(selectRestStreams(core!, ['gift_certificates', 'customers']).map((s) => s.resource)).toEqual(['customers', 'giftcertificates']);
    expect(selectProStreams(pro as ProSourceConfig, ['pro_waitlist_slots']).map((s) => s.resource)).toEqual(['waitlist-slots']);
    expect(() => selectRestStreams(core!, ['gift_certificate'])).toThrow(/has no resource "gift_certificate"/);
  });

  it('runs --resource takes the table name', async () => {
    for (const name of ['giftcertificates', 'gift_certificates']) {
      const res = await cli('runs', '--resource', name, '--json');
      expect(res.code, res.stderr).toBe(0);
      expect(
        (JSON.parse(res.stdout) as Array<{ resource: string }>).map((r) => r.resource),
        name,
      ).toEqual(['giftcertificates']);
    }
  });

  it('drift and repopulate --table take the resource name', async () => {
    const drift = await cli('drift', '--source', 'clinic', '--table', 'giftcertificates', 'membership_programs', '--json');
    expect(drift.code, drift.stderr).toBe(0);
    const report = JSON.parse(drift.stdout) as Array<{ tables: Array<{ table: string }> }>;
    expect(report[0]!.tables.map((t) => t.table)).toEqual(['membership_programs', 'gift_certificates']);
    const repopulate = await cli('repopulate', '--source', 'pro_c', '--table', 'patients');
    expect(repopulate.code, repopulate.stderr).toBe(0);
    expect(repopulate.stdout).toBe('pro_c/pro_patients: 0 row(s) changed, 0 history version(s) changed\n');
    const unknown = await cli('drift', '--source', 'clinic', '--table', 'giftcertificate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--table giftcertificate: source "clinic" \(core\) has no such table/);
  });

  it('resync and sync take the table name', async () => {
    const resync = await cli('resync', 'pro_patients', '--id', '3');
    expect(resync.code).toBe(2);
    expect(resync.stderr).toContain('use "pmsync resync patients --source pro_c --full"');
    // Validated before anything is opened: a known table name passes, an unknown one is refused.
    const sync = await cli('sync', '--source', 'clinic', '--resource', 'gift_certificate');
    expect(sync.code).toBe(2);
    expect(sync.stderr).toMatch(/--resource gift_certificate: source "clinic" \(core\) has no resource/);
  });
});
