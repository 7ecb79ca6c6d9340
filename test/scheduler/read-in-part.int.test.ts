/**
 * A source read again in part, against PostgreSQL: the change log names the
 * streams whose own rows were written (`stream:<source>/<resource>`) apart
 * from the source's health and registrations (`health:<source>`), and
 * readSourcesAgain, from what was read of a source before and the streams
 * named since, gives exactly what reading the source whole gives at the same
 * instant (the kept streams' windows cut to the lookback as of then), while
 * canReadInPart sends a source to a whole read when what was read of it moved
 * with the clock in a way only that follows.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quotaSettingsFor } from '../../src/app.ts';
import type { SourceConfig } from '../../src/config/schema.ts';
import { loadConfig } from '../../src/config/load.ts';
import { streamCatalog } from '../../src/scheduler/catalog.ts';
import { canReadInPart, readSources, readSourcesAgain, type SourceReadings } from '../../src/scheduler/observe.ts';
import { planStreams, type ScheduledStream } from '../../src/scheduler/plan.ts';
import { QuotaLedger } from '../../src/state/quota.ts';
import { ChangeReader } from '../../src/state/source-changes.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ZONE = 'America/New_York';
/** 14:00 in New York: its quota day began at 05:00 UTC. */
const T0 = Date.parse('2027-11-18T19:00:00Z');

let db: TestDatabase;
let sources: SourceConfig[];
let streams: ScheduledStream[];
let deps: Parameters<typeof readSources>[0];

beforeAll(async () => {
  db = await createTestDatabase();
  const file = join(mkdtempSync(join(tmpdir(), 'pmsync-read-in-part-')), 'pmsync.json');
  writeFileSync(
    file,
    JSON.stringify({
      sources: ['a', 'b'].map((name, i) => ({
        name,
        kind: 'core',
        baseUrl: 'http://127.0.0.1:9/api/v1',
        apikey: `part-key-${i}-x9`,
        username: `user${i}`,
        password: `pass-${i}-Q7`,
        timeZone: ZONE,
        quota: { timeZone: ZONE, resetHour: 0 },
      })),
    }),
  );
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  sources = config.sources;
  const planned = planStreams(config.schedules, config.sources, streamCatalog);
  expect(planned.problems).toEqual([]);
  streams = planned.streams;
  deps = { pool: db.pool, ledgerFor: (s: SourceConfig) => new QuotaLedger(db.pool, quotaSettingsFor(s), () => new Date(T0)) };
});
afterAll(async () => {
  await db?.drop();
});

const at = (ms: number) => new Date(ms);

/** A completed check of a stream over [from, to) that found `changes` (first of them at `first`). */
async function check(source: string, resource: string, from: number, to: number, changes: number, first?: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO pmsync.runs (source, resource, mode, purpose, status, started_at, ended_at, window_start, window_end, pages, requests, updated, first_change_at)
     VALUES ($1, $2, 'incremental', 'check', 'succeeded', $4, $4, $3, $4, 1, $6, $5, $7)`,
    [source, resource, at(from), at(to), changes, 1 + Math.floor(changes / 100), first === undefined ? null : at(first)],
  );
}

async function notify(source: string, resource: string | null, received: number, id: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO pmsync.webhook_events (source, event_id, event_type, tenant_id, application, event_timestamp, url, resource, outcome, received_at, last_received_at)
     VALUES ($1, $2, 'Appointment.Updated', 't', 'a', $3, 'u', $4, 'notified', $3, $3)`,
    [source, id, at(received), resource],
  );
}

describe('reading a source again in part', () => {
  let before: SourceReadings;

  beforeAll(async () => {
    // Both sources: every stream checked through the day, a window every 40 minutes on the busy ones; memberships
    // once, five and a half hours ago (its window leaves the evidence's six-hour lookback within the hour).
    for (const source of ['a', 'b']) {
      for (const [i, resource] of ['appointments', 'customers', 'orders'].entries()) {
        for (let t = T0 - 7 * HOUR; t < T0; t += 40 * MINUTE)
          await check(source, resource, t - 40 * MINUTE, t + i * MINUTE, (t / MINUTE) % 7, t - 20 * MINUTE);
      }
      await check(source, 'memberships', T0 - 9 * HOUR, T0 - 5.5 * HOUR, 2);
      await db.pool.query(
        `INSERT INTO pmsync.stream_schedule (source, resource, last_fire_at, last_done_at, last_check_at, last_outcome)
         SELECT $1, r, $2, $2, $2, 'succeeded' FROM unnest($3::text[]) r`,
        [source, at(T0 - 10 * MINUTE), ['appointments', 'customers', 'orders', 'memberships']],
      );
      await db.pool.query(`INSERT INTO pmsync.sync_state (source, resource, cursor) SELECT $1, r, $2 FROM unnest($3::text[]) r`, [
        source,
        at(T0 - 12 * MINUTE),
        ['appointments', 'customers', 'orders', 'memberships'],
      ]);
      await notify(source, 'appointments', T0 - 5 * MINUTE, `${source}-n1`);
      await notify(source, 'customers', T0 - 3 * HOUR, `${source}-n2`);
    }
    const key = quotaSettingsFor(sources[0]!).keyId;
    await db.pool.query(
      `INSERT INTO pmsync.quota_usage (key_id, quota_day, used, used_check, daily_limit, budget, updated_at) VALUES ($1, '2027-11-18', 40, 40, 1000, 150, now())`,
      [key],
    );
    await db.pool.query(`INSERT INTO pmsync.source_health (source, last_success_at, updated_at) VALUES ('a', $1, now())`, [at(T0)]);
    before = (await readSources(deps, sources, streams, at(T0))).get('a')!;
  });

  it('names the streams whose rows were written, the health apart, and no whole source', async () => {
    const reader = new ChangeReader();
    await reader.poll(db.pool); // the first poll reports nothing: everything is read then
    const T1 = T0 + 20 * MINUTE;
    // Three pages: the stream's cost of a check moves too.
    await check('a', 'appointments', T0 - 10 * MINUTE, T1 - 2 * MINUTE, 250, T0 - 5 * MINUTE);
    await db.pool.query(`UPDATE pmsync.stream_schedule SET last_fire_at = $1 WHERE source = 'a' AND resource = 'orders'`, [at(T1)]);
    await notify('a', 'customers', T1, 'a-n3');
    await db.pool.query(`UPDATE pmsync.source_health SET last_success_at = $1, updated_at = now() WHERE source = 'a'`, [at(T1)]);
    await db.pool.query(`UPDATE pmsync.quota_usage SET used = used + 1, used_check = used_check + 1`);
    const changed = await reader.poll(db.pool);
    expect([...changed].sort()).toEqual(
      ['health:a', `key:${quotaSettingsFor(sources[0]!).keyId}`, 'stream:a/appointments', 'stream:a/customers', 'stream:a/orders'].sort(),
    );
    // A notification of no resource has the source read whole.
    await notify('b', null, T1, 'b-n9');
    expect([...(await reader.poll(db.pool))]).toEqual(['b']);
  });

  it('gives what a whole read gives at the same instant, the kept windows cut to the lookback', async () => {
    const T2 = T0 + 50 * MINUTE;
    expect(canReadInPart(before, at(T2))).toBe(true);
    const again = await readSourcesAgain(
      deps,
      [{ source: sources[0]!, readings: before, resources: new Set(['appointments', 'customers', 'orders']) }],
      streams,
      at(T2),
    );
    const whole = await readSources(deps, [sources[0]!], streams, at(T2));
    expect(again.get('a')).toEqual(whole.get('a'));
    // What the comparison covers: the changed streams read again, a kept one's window gone from the lookback.
    expect(whole.get('a')!.windows.get('appointments')![0]!.changes).toBe(250);
    expect(whole.get('a')!.costs.get('appointments')).toBeGreaterThan(before.costs.get('appointments')!);
    expect(whole.get('a')!.notified.get('customers')!.pending).toBe(2);
    expect(whole.get('a')!.rows.get('orders')!.lastFireAt).toEqual(at(T0 + 20 * MINUTE));
    expect(before.windows.get('memberships')).toHaveLength(1);
    expect(whole.get('a')!.windows.has('memberships')).toBe(false);
    expect(whole.get('a')!.quota.used).toBe(41);
    // Kept as read: b was not asked for.
    expect(again.has('b')).toBe(false);
  });

  it('reads the ledger, health and registrations again when no stream changed', async () => {
    const T2 = T0 + 55 * MINUTE;
    const read = (await readSources(deps, [sources[0]!], streams, at(T2))).get('a')!;
    const T3 = T2 + 20 * MINUTE;
    await db.pool.query(
      `UPDATE pmsync.source_health SET consecutive_failures = 2, paused_until = $1, updated_at = now() WHERE source = 'a'`,
      [at(T3 + HOUR)],
    );
    await db.pool.query(`UPDATE pmsync.quota_usage SET used = used + 3, used_check = used_check + 3`);
    const again = (await readSourcesAgain(deps, [{ source: sources[0]!, readings: read, resources: new Set() }], streams, at(T3))).get(
      'a',
    )!;
    expect(again).toEqual((await readSources(deps, [sources[0]!], streams, at(T3))).get('a'));
    expect([again.health?.pausedUntil, again.quota.used, again.at]).toEqual([at(T3 + HOUR), read.quota.used + 3, at(T3)]);
  });

  it('sends a source to a whole read when a notification would leave its lookback, or its quota day turned', async () => {
    expect(canReadInPart(before, at(T0 + HOUR))).toBe(true);
    // b's customers notification came at T0 - 3h and is pending: it leaves the 24-hour lookback at T0 + 21h.
    const b = (await readSources(deps, [sources[1]!], streams, at(T0))).get('b')!;
    expect(canReadInPart(b, at(T0 + 21 * HOUR - MINUTE))).toBe(false); // the quota day turned first (at 05:00 UTC)
    expect(canReadInPart(b, at(b.quota.resetsAt.getTime() - MINUTE))).toBe(true);
    // Moved to a later quota day that began after the lookback's start, so that only the notification decides.
    const late = { ...b, quota: { ...b.quota, startsAt: at(T0 + 18 * HOUR), resetsAt: at(T0 + 48 * HOUR) } };
    expect(canReadInPart(late, at(T0 + 21 * HOUR - MINUTE))).toBe(true);
    expect(canReadInPart(late, at(T0 + 21 * HOUR))).toBe(false);
    // A quota day longer than the lookback (the day clocks fall back) counts notifications a partial read cannot cut.
    const long = { ...b, quota: { ...b.quota, startsAt: at(T0 - 25 * HOUR), resetsAt: at(T0 + 48 * HOUR) } };
    expect(canReadInPart(long, at(T0))).toBe(false);
  });
});
