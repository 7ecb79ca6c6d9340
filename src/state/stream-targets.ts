/**
 * pmsync.stream_targets: per configured stream, its table, schedule and
 * freshness target, as the configuration pmsync last ran with says. The
 * database cannot read the configuration file: the pmsync_freshness view
 * reads these rows. `serve` writes them at start and on every reload, `sync`
 * before it runs (src/scheduler/targets.ts says what they are); the rows of a
 * source's streams it no longer lists go.
 */
import type { Queryable } from '../db/pool.ts';

export interface StreamTarget {
  source: string;
  resource: string;
  table: string;
  kind: 'incremental' | 'full';
  /** "budget", "off", or the cron expression and its time zone. */
  schedule: string;
  /** The freshness target in minutes; null: none. */
  targetMinutes: number | null;
  /** The longest a budget stream waits between checks; null for pinned and off streams. */
  floorMinutes: number | null;
}

/** Writes the targets of these sources' streams and drops the rows of their streams no longer listed. */
export async function saveStreamTargets(db: Queryable, sources: string[], targets: StreamTarget[]): Promise<void> {
  await db.query(
    `WITH t AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::float8[])
         AS t(source, resource, table_name, kind, schedule, target_minutes, floor_minutes)
     ), gone AS (
       DELETE FROM pmsync.stream_targets s WHERE s.source = ANY($1::text[])
         AND NOT EXISTS (SELECT 1 FROM t WHERE t.source = s.source AND t.resource = s.resource)
     )
     INSERT INTO pmsync.stream_targets AS s (source, resource, table_name, kind, schedule, target_minutes, floor_minutes)
     SELECT * FROM t
     ON CONFLICT (source, resource) DO UPDATE SET table_name = excluded.table_name, kind = excluded.kind, schedule = excluded.schedule,
       target_minutes = excluded.target_minutes, floor_minutes = excluded.floor_minutes, updated_at = now()
     WHERE (s.table_name, s.kind, s.schedule, s.target_minutes, s.floor_minutes)
       IS DISTINCT FROM (excluded.table_name, excluded.kind, excluded.schedule, excluded.target_minutes, excluded.floor_minutes)`,
    [
      sources,
      targets.map((t) => t.source),
      targets.map((t) => t.resource),
      targets.map((t) => t.table),
      targets.map((t) => t.kind),
      targets.map((t) => t.schedule),
      targets.map((t) => t.targetMinutes),
      targets.map((t) => t.floorMinutes),
    ],
  );
}
