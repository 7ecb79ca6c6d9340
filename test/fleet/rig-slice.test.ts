/**
 * The fleet benchmark compares each practice played alone with the same
 * practice in the fleet (bench/fleet.ts): that holds only if a rig serving
 * one practice of the fleet (`firstPractice`) gives it the same gateway key,
 * source name, records, history and day as the whole fleet's rig does.
 * No replica is started: the simulator and the configuration are compared.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetRig, type FleetOptions } from '../../bench/support/fleet-rig.ts';
import { REFERENCE_DAY } from '../../simulator/day.ts';
import { CORE_RESOURCES } from '../../simulator/index.ts';

const OPTIONS: Omit<FleetOptions, 'practices'> = {
  // Never connected to: no replica is started and nothing is queried.
  databaseUrl: 'postgres://nobody@127.0.0.1:1/none',
  replicas: 1,
  date: '2027-11-18',
  timeZone: 'America/New_York',
  sizes: { customers: 30, appointments: 60, orders: 20, products: 4 },
  historyDays: 3,
  historyPattern: REFERENCE_DAY,
};

const rigs: FleetRig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.close()));
});

async function start(o: Partial<FleetOptions> & { practices: number }): Promise<FleetRig> {
  const rig = await FleetRig.start({ ...OPTIONS, ...o });
  rigs.push(rig);
  return rig;
}

const sources = (rig: FleetRig) =>
  (JSON.parse(readFileSync(rig.configFile, 'utf8')) as { sources: Array<{ name: string; apikey: string }> }).sources;
const records = (rig: FleetRig, i: number) => CORE_RESOURCES.map((r) => rig.tenants[i]!.list(r));

describe('a rig serving one practice of a fleet', () => {
  it('gives it the key, name, records, history and day it has in the whole fleet', async () => {
    const fleet = await start({ practices: 4 });
    const alone = await start({ practices: 1, firstPractice: 2 });
    const other = await start({ practices: 1, firstPractice: 1 });

    expect(sources(alone)).toEqual([expect.objectContaining({ name: 'p002', apikey: 'fleet-key-002' })]);
    expect(sources(fleet)[2]).toEqual(expect.objectContaining({ name: 'p002', apikey: 'fleet-key-002' }));
    expect(records(alone, 0)).toEqual(records(fleet, 2));

    fleet.playHistory();
    alone.playHistory();
    other.playHistory();
    expect(records(alone, 0)).toEqual(records(fleet, 2));
    // Another practice's history is its own: the comparison above could not pass by every practice being alike.
    expect(records(other, 0)).not.toEqual(records(alone, 0));

    const day = (rig: FleetRig, tenant: number) =>
      rig
        .planDay(REFERENCE_DAY)
        .filter((c) => c.tenant === tenant)
        .map(({ tenant: _, ...c }) => c);
    expect(day(alone, 0).length).toBeGreaterThan(100);
    expect(day(alone, 0)).toEqual(day(fleet, 2));
    expect(day(other, 0)).not.toEqual(day(alone, 0));

    const change = alone.planDay(REFERENCE_DAY)[0]!;
    expect(alone.apply(change).source).toBe('p002');
    expect(alone.allRequests()).toEqual([{ used: 0, rejected: 0 }]);
  });
});
