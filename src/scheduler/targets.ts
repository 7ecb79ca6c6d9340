/**
 * Each configured stream's table, schedule and freshness target, as the
 * scheduler plans them, and their record in pmsync.stream_targets
 * (src/state/stream-targets.ts) for the pmsync_freshness view.
 */
import type { Config, SourceConfig } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { saveStreamTargets, type StreamTarget } from '../state/stream-targets.ts';
import { resourceTablesFor } from '../sync/streams/index.ts';
import { streamCatalog } from './catalog.ts';
import { planStreams, type ScheduledStream } from './plan.ts';

/** The targets of every stream of the configured sources (pure). */
export function streamTargets(config: Pick<Config, 'schedules' | 'sources'>): StreamTarget[] {
  const planned = planStreams(config.schedules, config.sources, streamCatalog).streams;
  return planned.map((s) =>
    targetOf(
      s,
      config.sources.find((x) => x.name === s.source)!,
      config.schedules.floorHours,
    ),
  );
}

function targetOf(s: ScheduledStream, source: SourceConfig, floorHours: number): StreamTarget {
  const table = resourceTablesFor(source).find((t) => t.resource === s.resource)!.table.name;
  return {
    source: s.source,
    resource: s.resource,
    table,
    kind: s.kind,
    schedule: s.schedule.mode === 'cron' ? `${s.schedule.cron} ${s.schedule.timeZone}` : s.schedule.mode,
    targetMinutes: s.schedule.mode === 'off' ? null : s.maxStalenessMinutes,
    floorMinutes: s.schedule.mode === 'budget' ? floorHours * 60 : null,
  };
}

/** Records the targets of every configured source. */
export async function recordStreamTargets(db: Queryable, config: Pick<Config, 'schedules' | 'sources'>): Promise<void> {
  await saveStreamTargets(
    db,
    config.sources.map((s) => s.name),
    streamTargets(config),
  );
}
