/**
 * Several `pmsync serve` replicas as real processes on one database, playing
 * practice days on a clock they get over IPC (bench/support/fleet-rig.ts):
 * each source's budget holds whichever replica runs its streams, and a
 * replica killed mid-run loses nothing; its runs resume in another.
 * Requests are the simulator's own counts per gateway key.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REFERENCE_DAY } from '../../simulator/day.ts';
import { DAY, HOUR, MINUTE } from '../../bench/support/day-rig.ts';
import { FleetRig, sourceName, type TrackedChange } from '../../bench/support/fleet-rig.ts';
import { listRuns } from '../../src/state/runs.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { scaled, waitUntil } from '../support/time-scale.ts';

const SIZES = {
  companies: 1,
  customers: 120,
  appointments: 250,
  orders: 90,
  memberships: 10,
  membershipprograms: 2,
  giftcertificates: 8,
  products: 6,
  services: 4,
  employees: 3,
};
const TIMEOUT = { timeout: scaled(300_000) };

let db: TestDatabase;
let rig: FleetRig | undefined;
beforeEach(async () => {
  db = await createTestDatabase({ migrate: false });
});
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  await db.drop();
});

async function startFleet(options: {
  practices: number;
  replicas: number;
  budget: number;
  heartbeat?: number;
  firstPasses?: boolean;
}): Promise<FleetRig> {
  rig = await FleetRig.start({
    databaseUrl: db.url,
    practices: options.practices,
    replicas: options.replicas,
    date: '2027-11-18',
    timeZone: 'America/New_York',
    sizes: SIZES,
    historyDays: 2,
    historyPattern: REFERENCE_DAY,
    source: { budget: options.budget },
    concurrency: 2,
    runHeartbeatSeconds: options.heartbeat ?? 30,
  });
  rig.playHistory();
  rig.setClock(rig.dayStart - 2 * HOUR);
  await rig.startReplicas();
  if (options.firstPasses === false) return rig;
  // First passes, the evening before.
  for (let i = 0; i < 20 && (await rig.tick()) > 0; i++) rig.setClock(rig.clock.ms + 5 * MINUTE);
  return rig;
}

/** Plays the measured day's changes from `from` to `to`, a tick every `step`; returns the changes with when they became visible. */
async function play(r: FleetRig, from: number, to: number, step: number, onTick?: (t: number) => Promise<void>): Promise<TrackedChange[]> {
  const changes = r.planDay(REFERENCE_DAY).filter((c) => c.at >= from && c.at < to);
  const tracked: TrackedChange[] = [];
  let pending: TrackedChange[] = [];
  let next = 0;
  for (let t = from; t < to; t += step) {
    while (next < changes.length && changes[next]!.at <= t) {
      const c = r.apply(changes[next++]!);
      tracked.push(c);
      pending.push(c);
    }
    r.setClock(t);
    if (onTick) await onTick(t);
    else await r.tick();
    pending = await r.markVisible(pending, t);
  }
  return tracked;
}

describe('replicas on one database', () => {
  it('hold each source budget over a day, whichever replica runs its streams, and every replica decides its shards', TIMEOUT, async () => {
    const r = await startFleet({ practices: 4, replicas: 3, budget: 12 });
    const tracked = await play(r, r.dayStart, r.dayStart + DAY, 30 * MINUTE);
    const day = r.allRequests();
    expect(tracked.length).toBeGreaterThan(1500);
    for (const [i, used] of day.entries()) {
      expect(used.rejected, `${sourceName(i)} got 429s`).toBe(0);
      expect(used.used, `${sourceName(i)} spent more than its budget`).toBeLessThanOrEqual(12);
      expect(used.used, `${sourceName(i)} was not checked`).toBeGreaterThan(0);
    }
    // Every replica decided through the day: each holds its share of the scheduling shards.
    const deciders = new Set(r.ticks.filter((t) => t.at >= r.dayStart).map((t) => t.replica));
    expect(deciders.size).toBe(3);
    const runs = await listRuns(db.pool, { limit: 1000 });
    expect(runs.filter((x) => x.status === 'succeeded').length).toBeGreaterThan(20);
  });

  it('lose nothing when a replica is killed mid-run: its runs resume in another within the stated bound', TIMEOUT, async () => {
    const r = await startFleet({ practices: 3, replicas: 2, budget: 60, heartbeat: 10, firstPasses: false });
    // The first passes start, slowed down so that they are still going when a replica is killed.
    r.sim.setFaults({ slowMs: 300 });
    expect(await r.tickAll()).toBeGreaterThan(0);
    const victim = await waitUntil(
      async () => {
        for (const rep of r.live()) {
          const p = await r.probe(rep);
          if (p.running.length > 0) return { replica: rep.index, runs: p.running };
        }
        return undefined;
      },
      'a replica running something',
      { timeoutMs: 10_000, everyMs: 25 },
    );
    const at = Date.now();
    await r.kill(r.replicas[victim.replica]!);
    r.sim.setFaults({});
    await r.drained();
    const killed = { ...victim, at };
    // The other replica finishes every first pass, then the morning is played.
    for (let i = 0; i < 20 && (await r.tick()) > 0; i++) r.setClock(r.clock.ms + 5 * MINUTE);
    await play(r, r.dayStart + 8 * HOUR, r.dayStart + 11 * HOUR, 30 * MINUTE);
    // The queue took the dead replica's jobs back (their heartbeat stopped) and another replica ran them to
    // the end; how long that takes is measured by the fleet benchmark, not asserted here.
    const retried = await r.retriedRuns();
    for (const key of killed.runs) expect(retried.find((j) => j.key === key)?.completedOn, `${key} was not retried`).toBeTruthy();
    // Each stream the dead replica was running has a run that succeeded after the kill.
    const runs = await listRuns(db.pool, { limit: 1000, status: 'succeeded' });
    for (const key of killed.runs) {
      const [source, resource] = key.split('/');
      expect(
        runs.some((x) => x.source === source && x.resource === resource && x.startedAt.getTime() >= killed.at), // started_at is the database's clock
        `${key} did not run again`,
      ).toBe(true);
    }
    // Then every practice is read once more: PostgreSQL holds every record at its latest version, once.
    r.setClock(r.dayStart + DAY + HOUR);
    const settle = await r.cli(['sync', '--quiet']);
    expect(settle.code, settle.stderr).toBe(0);
    const compared = await r.compare();
    expect(compared.records).toBeGreaterThan(1000);
    expect(compared.lost, compared.examples.join(', ')).toBe(0);
    expect(compared.duplicated).toBe(0);
  });
});
