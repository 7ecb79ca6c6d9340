/**
 * pmsync.schedules: the last fire each schedule had. SQL is built by pure
 * functions returning { text, values }; callers run it on any Queryable.
 */
import type { Queryable } from '../db/pool.ts';
import type { SqlQuery } from '../db/upsert.ts';
import type { Schedule } from './plan.ts';

export interface ScheduleRow {
  key: string;
  lastFireAt: Date | null;
}

/** Adds new schedules and updates changed expressions; a known schedule keeps its last fire. */
export function registerSql(schedules: Schedule[]): SqlQuery {
  return {
    text: `INSERT INTO pmsync.schedules AS s (key, source, resource, cron, time_zone)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
           ON CONFLICT (key) DO UPDATE SET source = excluded.source, resource = excluded.resource, cron = excluded.cron,
             time_zone = excluded.time_zone, updated_at = now()
           RETURNING key, last_fire_at`,
    values: [
      schedules.map((s) => s.key),
      schedules.map((s) => s.source),
      schedules.map((s) => s.resource),
      schedules.map((s) => s.cron),
      schedules.map((s) => s.timeZone),
    ],
  };
}

/**
 * Claims one fire. Exactly one of any number of processes gets a row back for a
 * given slot: the first UPDATE moves last_fire_at to the slot, and the others'
 * conditions then fail. The previous value comes back so an unstarted claim can
 * be handed back.
 */
export function claimSql(key: string, slot: Date, holder: string): SqlQuery {
  return {
    text: `UPDATE pmsync.schedules s SET last_fire_at = $2, last_claimed_by = $3, last_claimed_at = now(), updated_at = now()
           FROM (SELECT key, last_fire_at FROM pmsync.schedules WHERE key = $1 FOR UPDATE) before
           WHERE s.key = before.key AND (s.last_fire_at IS NULL OR s.last_fire_at < $2)
           RETURNING before.last_fire_at AS previous`,
    values: [key, slot, holder],
  };
}

/** Hands a claimed fire back (the process stopped before running it), unless a later fire was claimed since. */
export function unclaimSql(key: string, slot: Date, previous: Date | null): SqlQuery {
  return {
    text: 'UPDATE pmsync.schedules SET last_fire_at = $3, updated_at = now() WHERE key = $1 AND last_fire_at = $2',
    values: [key, slot, previous],
  };
}

export async function registerSchedules(db: Queryable, schedules: Schedule[]): Promise<Map<string, Date | null>> {
  if (schedules.length === 0) return new Map();
  const res = await db.query<{ key: string; last_fire_at: Date | null }>(registerSql(schedules));
  return new Map(res.rows.map((r) => [r.key, r.last_fire_at]));
}

/** The claim's previous last fire, or undefined when another process (or an earlier tick) already has this slot. */
export async function claimFire(db: Queryable, key: string, slot: Date, holder: string): Promise<{ previous: Date | null } | undefined> {
  const res = await db.query<{ previous: Date | null }>(claimSql(key, slot, holder));
  const row = res.rows[0];
  return row ? { previous: row.previous } : undefined;
}

export async function unclaimFire(db: Queryable, key: string, slot: Date, previous: Date | null): Promise<void> {
  await db.query(unclaimSql(key, slot, previous));
}

/** Streams of these keys with a window checkpoint pending: a run was stopped part-way. */
export async function interruptedStreams(db: Queryable, schedules: Schedule[]): Promise<Set<string>> {
  if (schedules.length === 0) return new Set();
  const res = await db.query<{ key: string }>(
    `SELECT source || '/' || resource AS key FROM pmsync.sync_state WHERE "window" IS NOT NULL AND source || '/' || resource = ANY($1::text[])`,
    [schedules.map((s) => s.key)],
  );
  return new Set(res.rows.map((r) => r.key));
}
