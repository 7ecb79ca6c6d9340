/**
 * Every serve replica decides the sources of the scheduling shards it holds
 * (src/state/locks.ts, shardLeases): replicas deciding at once, started and
 * killed in the middle of their ticks, never dispatch a source from a shard
 * they do not hold at that moment, and between them every source is decided.
 * The replicas are schedulers in this process, each with its own pool and
 * shard connection on one real PostgreSQL; their dispatches go to a list (the
 * run queue is not what is tested). What each claim found is recorded by a
 * trigger in the claim's own transaction: the holder of every shard's lock
 * at that instant.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quotaSettingsFor } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { streamCatalog } from '../../src/scheduler/catalog.ts';
import type { RunJob } from '../../src/scheduler/dispatch.ts';
import { Scheduler } from '../../src/scheduler/scheduler.ts';
import { SCHEDULING_SHARDS, shardLeases, shardOf, type ShardLeases } from '../../src/state/locks.ts';
import { QuotaLedger } from '../../src/state/quota.ts';
import { recordRunEnd } from '../../src/state/stream-schedule.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const SOURCES = 40;
const HOUR = 3_600_000;

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  // The test's witness: at every claim, which session held each shard's lock.
  await db.pool.query(`
    CREATE TABLE claim_audit (id bigserial, source text, resource text, claimed_by text, holders text[]);
    CREATE FUNCTION audit_claim() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' OR NEW.last_fire_at IS DISTINCT FROM OLD.last_fire_at THEN
        INSERT INTO claim_audit (source, resource, claimed_by, holders) SELECT NEW.source, NEW.resource, NEW.last_fire_by,
          (SELECT coalesce(array_agg(objid::int || ':' || pid), '{}') FROM pg_locks
           WHERE locktype = 'advisory' AND granted AND classid = 727006 AND objsubid = 2
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database()));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER audit_claim AFTER INSERT OR UPDATE ON pmsync.stream_schedule FOR EACH ROW EXECUTE FUNCTION audit_claim();`);
});
afterAll(async () => db.drop());

describe('scheduling shards under replicas started and killed mid-tick', () => {
  it(
    'never dispatch a source from a shard its replica does not hold, and decide every source between them',
    { timeout: 300_000 },
    async () => {
      const names = Array.from({ length: SOURCES }, (_, i) => `practice-${i}`);
      const file = join(mkdtempSync(join(tmpdir(), 'pmsync-shards-')), 'pmsync.json');
      writeFileSync(
        file,
        JSON.stringify({
          sources: names.map((name, i) => ({
            name,
            kind: 'core',
            baseUrl: 'http://127.0.0.1:9/api/v1',
            apikey: `shard-key-${i}-x9`,
            username: `user${i}`,
            password: `pass-${i}-Q7`,
            timeZone: 'UTC',
          })),
          schedules: { floorHours: 2 },
        }),
      );
      const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
      const resources = streamCatalog(config.sources[0]!).map((s) => s.resource);
      let now = Date.UTC(2027, 10, 18, 6);
      // Every stream read two hours ago: each is due on its floor, a dozen at a time as the clock moves.
      await db.pool.query(
        `INSERT INTO pmsync.sync_state (source, resource, cursor) SELECT s, r, $3 FROM unnest($1::text[]) s, unnest($2::text[]) r`,
        [names, resources, new Date(now - 2 * HOUR)],
      );
      await db.pool.query(
        `INSERT INTO pmsync.stream_schedule (source, resource, last_fire_at, last_done_at, last_check_at)
       SELECT s, r, $3::timestamptz - (random() * interval '2 hours'), $3::timestamptz - interval '2 hours', $3::timestamptz - (random() * interval '2 hours')
       FROM unnest($1::text[]) s, unnest($2::text[]) r`,
        [names, resources, new Date(now)],
      );
      await db.pool.query('DELETE FROM claim_audit');

      const inFlight = new Map<string, RunJob>();
      const dispatched: Array<{ by: string; job: RunJob }> = [];
      interface Replica {
        name: string;
        pool: Pool;
        shards: ShardLeases;
        scheduler: Scheduler;
        /** Every backend its shard connection had: a killed connection comes back as another. */
        pids: Set<number>;
      }
      const replicas: Replica[] = [];
      const start = (name: string): Replica => {
        const pool = createPool(db.url, 3);
        const pids = new Set<number>();
        const leases = shardLeases(pool, SCHEDULING_SHARDS, name);
        // Every backend that held the replica's shards, as each sync leaves it: a connection killed and opened again
        // within one tick shows only there.
        const shards: ShardLeases = {
          async sync() {
            const held = await leases.sync();
            if (leases.pid !== null) pids.add(leases.pid);
            return held;
          },
          get held() {
            return leases.held;
          },
          get pid() {
            return leases.pid;
          },
          release: () => leases.release(),
        };
        const scheduler = new Scheduler({
          pool,
          logger: pino({ level: 'silent' }),
          now: () => new Date(now),
          holder: name,
          config,
          catalog: streamCatalog,
          ledgerFor: (s) => new QuotaLedger(pool, quotaSettingsFor(s), () => new Date(now)),
          dispatcher: {
            async dispatch(job) {
              inFlight.set(`${job.source}/${job.resource}`, job);
              dispatched.push({ by: name, job });
              return true;
            },
            async inFlight() {
              return new Set(inFlight.keys());
            },
          },
          shards,
        });
        const r = { name, pool, shards, scheduler, pids };
        replicas.push(r);
        return r;
      };
      const live = () => replicas;
      start('replica-a');
      start('replica-b');
      start('replica-c');

      let kills = 0;
      // Per round: the last audit row it wrote, and the replica whose shard connection it killed.
      const rounds: Array<{ upTo: number; killed: string | null }> = [];
      for (let round = 0; round < 40; round++) {
        let killed: string | null = null;
        if (round === 12) start('replica-d');
        if (round === 25) start('replica-e');
        // Runs dispatched at the last round end now.
        for (const job of inFlight.values()) {
          await recordRunEnd(db.pool, {
            source: job.source,
            resource: job.resource,
            firedAt: new Date(job.firedAt),
            at: new Date(now),
            outcome: 'succeeded',
            checkedAt: new Date(job.firedAt),
          });
        }
        inFlight.clear();
        now += 10 * 60_000;
        const ticking = live().map(async (r) => {
          await r.scheduler.tick();
          if (r.shards.pid !== null) r.pids.add(r.shards.pid);
        });
        // Every few rounds, one replica's shard connection is killed while the replicas tick: its shards are free at
        // once, another takes them at its next tick, and what the killed one decides meanwhile must not dispatch.
        if (round % 3 === 1) {
          const victim = live()[round % live().length]!;
          await new Promise((r) => setTimeout(r, (round * 7) % 25));
          const pid = victim.shards.pid;
          if (pid !== null) {
            victim.pids.add(pid);
            const res = await db.pool.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
            if (res.rows[0]?.ok) {
              kills++;
              killed = victim.name;
            }
          }
        }
        await Promise.all(ticking);
        const last = await db.pool.query<{ id: string | null }>('SELECT max(id)::text AS id FROM claim_audit');
        rounds.push({ upTo: Number(last.rows[0]?.id ?? 0), killed });
        for (const r of live()) if (r.shards.pid !== null) r.pids.add(r.shards.pid);
      }
      expect(kills).toBeGreaterThanOrEqual(10);

      // No stream was dispatched twice at one tick (two replicas deciding its source at once).
      const fires = dispatched.map((d) => `${d.job.source}/${d.job.resource} ${d.job.firedAt}`);
      expect(fires.length - new Set(fires).size, 'streams dispatched twice at one tick').toBe(0);
      // Every successful claim was made by the replica that held the source's shard at that instant.
      const audit = await db.pool.query<{ id: string; source: string; resource: string; claimed_by: string; holders: string[] }>(
        'SELECT id::text, source, resource, claimed_by, holders FROM claim_audit',
      );
      expect(audit.rows.length).toBe(dispatched.length);
      expect(dispatched.length).toBeGreaterThan(100);
      const pidsOf = new Map(replicas.map((r) => [r.name, r.pids]));
      for (const row of audit.rows) {
        const holders = new Map(row.holders.map((h) => h.split(':').map(Number) as [number, number]));
        const holder = holders.get(shardOf(row.source));
        if (holder === undefined) {
          // The claim's fence and this witness read the locks one after the other: a shard connection killed between
          // them leaves a claim its fence saw held and the witness saw free. Only the replica killed in that round may
          // show so.
          const round = rounds.find((r) => Number(row.id) <= r.upTo);
          expect(round?.killed, `${row.source}/${row.resource} claimed by ${row.claimed_by} while no session held its shard`).toBe(
            row.claimed_by,
          );
          continue;
        }
        expect(
          pidsOf.get(row.claimed_by)?.has(holder),
          `${row.source}/${row.resource} claimed by ${row.claimed_by}, shard held by ${holder}`,
        ).toBe(true);
      }
      // Every source was decided, by the replicas between them; the later replicas took their share.
      expect(new Set(dispatched.map((d) => d.job.source)).size).toBe(SOURCES);
      for (const name of ['replica-d', 'replica-e']) expect(dispatched.some((d) => d.by === name)).toBe(true);
      // Once the kills stop, each shard is held by exactly one replica within a few ticks.
      for (let i = 0; i < 3; i++) for (const r of live()) await r.shards.sync();
      const held = live().flatMap((r) => [...r.shards.held]);
      expect(new Set(held).size).toBe(held.length);
      expect(held.length).toBe(SCHEDULING_SHARDS);

      for (const r of replicas) {
        await r.scheduler.stop();
        await r.pool.end();
      }
    },
  );
});
