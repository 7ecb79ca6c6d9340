/**
 * Per stream, for `pmsync status`: its schedule under the current
 * configuration, the last fire any serve process claimed, the next one, and
 * which process (if any) is running it right now.
 */
import type { Config } from '../config.ts';
import type { Queryable } from '../db/pool.ts';
import { streamCatalog } from '../serve/catalog.ts';
import { nextFire, parseCron } from './crontab.ts';
import { heldStreamLocks, streamLockKey } from './lock.ts';
import { planSchedules } from './plan.ts';
import { schedulesSchema } from './settings.ts';

export interface StreamScheduleStatus {
  /** Null when the stream's schedule is "off". */
  cron: string | null;
  timeZone: string | null;
  lastFire: string | null;
  nextFire: string | null;
  /** application_name of the connection holding the stream's lock: "pmsync lock <stream> <host>:<pid>". */
  runningIn: string | null;
}

export async function streamScheduleStatus(db: Queryable, config: Config, now: Date): Promise<Map<string, StreamScheduleStatus>> {
  const plan = planSchedules(config.schedules ?? schedulesSchema.parse({}), config.sources, streamCatalog);
  const [fires, locks] = await Promise.all([
    db.query<{ key: string; last_fire_at: Date | null }>('SELECT key, last_fire_at FROM pmsync.schedules'),
    heldStreamLocks(db),
  ]);
  const lastFire = new Map(fires.rows.map((r) => [r.key, r.last_fire_at]));
  const holders = new Map(locks.map((l) => [l.key, l.holder]));
  const out = new Map<string, StreamScheduleStatus>();
  for (const source of config.sources) {
    for (const stream of streamCatalog(source)) {
      const key = `${source.name}/${stream.resource}`;
      const s = plan.schedules.find((x) => x.key === key);
      const next = s ? nextFire(parseCron(s.cron), s.timeZone, now) : null;
      out.set(key, {
        cron: s?.cron ?? null,
        timeZone: s?.timeZone ?? null,
        lastFire: lastFire.get(key)?.toISOString() ?? null,
        nextFire: next?.toISOString() ?? null,
        runningIn: holders.get(streamLockKey(source.name, stream.resource))?.replace(/^pmsync lock \S+ /, '') ?? null,
      });
    }
  }
  return out;
}

/** The text `pmsync status` appends to a stream's line. */
export function describeSchedule(s: StreamScheduleStatus | null | undefined): string {
  if (!s) return '';
  const when = s.cron ? `, serve: next ${s.nextFire ?? 'never'} (${s.cron} ${s.timeZone})` : ', serve: schedule off';
  return `${when}${s.runningIn ? `, RUNNING NOW in ${s.runningIn}` : ''}`;
}
