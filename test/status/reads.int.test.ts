/**
 * The reads of src/status that the printers, the page and the metrics rely
 * on, against PostgreSQL and with no API request sent: `runs` narrowed by a
 * table name, the queue depths before any queue exists, the retention in
 * force, and each source's verdict joined to its detail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { Config } from '../../src/config/schema.ts';
import { finishRun, startRun } from '../../src/state/runs.ts';
import { heldSources, retentionStatus } from '../../src/status/notes.ts';
import { runQueue, streamsInFlight, webhookBacklog, webhookQueue, whileReadingQueues } from '../../src/status/queues.ts';
import { collectDetail } from '../../src/status/report.ts';
import { readRuns } from '../../src/status/runs.ts';
import { writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { openTestApp, type TestApp } from '../support/harness.ts';

let db: TestDatabase;
let app: TestApp;
let config: Config;

beforeAll(async () => {
  db = await createTestDatabase();
  // Port 9 (discard) on loopback: nothing here sends a request.
  const source = (name: string) => ({
    name,
    kind: 'core',
    baseUrl: 'http://127.0.0.1:9/api/v1',
    apikey: `k-${name}`,
    username: 'u',
    password: 'p',
  });
  const file = writeConfig({ sources: [source('alder'), source('birch')], retention: { historyDays: 30 } });
  config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  app = await openTestApp(config);
});
afterAll(async () => {
  await app?.close();
  await db?.drop();
});

describe('the runs `pmsync runs` lists', () => {
  it('are narrowed by a table name as by its resource, newest first', async () => {
    const run = async (resource: string) => {
      const id = await startRun(db.pool, {
        source: 'alder',
        resource,
        mode: 'incremental',
        purpose: 'check',
        windowStart: null,
        windowEnd: null,
      });
      await finishRun(db.pool, id, 'succeeded', { requests: 2 });
      return id;
    };
    const first = await run('giftcertificates');
    await run('customers');
    const second = await run('giftcertificates');
    const byTable = await readRuns(app, { limit: 10, resource: 'gift_certificates' });
    expect(byTable.map((r) => r.id)).toEqual([second, first]);
    expect(await readRuns(app, { limit: 10, resource: 'giftcertificates' })).toEqual(byTable);
    expect(await readRuns(app, { limit: 1 })).toHaveLength(1);
    expect(await readRuns(app, { limit: 10, source: 'birch' })).toEqual([]);
    expect(await heldSources(app)).toMatchObject([{ source: 'alder', streams: 2 }]);
  });
});

describe('the queue depths', () => {
  it('are zero before any queue exists, and the webhook queue is not read without a Core source', async () => {
    // Read as `pmsync status` reads them: through a job queue that only reads, over the App's pool.
    await whileReadingQueues(app, async () => {
      expect(await webhookQueue(app.pool, config)).toEqual({ ready: 0, deferred: 0, retrying: 0, active: 0, deadLettered: 0 });
      expect(await webhookQueue(app.pool, { ...config, sources: [] })).toBeNull();
      expect(await webhookBacklog(app.pool)).toEqual({ backlog: 0, deadLetters: 0 });
      expect(await runQueue(app.pool)).toEqual({ waiting: 0, oldestWaitSeconds: 0 });
      expect(await streamsInFlight(app.pool, ['alder/customers', 'birch/customers'])).toEqual(new Set());
    });
  });
});

describe('the retention in force', () => {
  it('comes from the config, with nothing purged yet', async () => {
    expect(await retentionStatus(app, config)).toEqual({
      quarantineDays: config.retention.quarantineDays,
      driftDays: config.retention.driftDays,
      webhookEventDays: config.webhooks.eventRetentionDays,
      historyDays: 30,
      lastPurge: null,
    });
  });
});

describe('the per-source detail', () => {
  it("gives each source its verdict, with the earliest of its streams' next checks", async () => {
    const statuses = await whileReadingQueues(app, () => collectDetail(app, config, {}));
    expect(statuses.map((s) => [s.source, s.health?.verdict])).toEqual([
      ['alder', 'behind'],
      ['birch', 'behind'],
    ]);
    for (const s of statuses) {
      const nexts = s.resources.flatMap((r) => (r.schedule?.nextCheck ? [{ ...r.schedule.nextCheck, resource: r.resource }] : []));
      const earliest = nexts.reduce<(typeof nexts)[number] | null>((m, n) => (!m || Date.parse(n.at) < Date.parse(m.at) ? n : m), null);
      expect(earliest).not.toBeNull();
      expect(s.health?.nextCheck).toEqual(earliest);
      expect(s.connectivity).toBeUndefined();
    }
  });
});
