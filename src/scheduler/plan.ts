/**
 * Which schedule each stream of each source follows under `serve`: the
 * configuration's `schedules` section applied to every configured stream.
 * Pure: no timers, no database.
 *
 * By default every stream is scheduled by budget (src/scheduler/budget.ts).
 * `schedules.incremental` / `schedules.full` set a cron expression (or "off")
 * for every incremental / full-refresh stream, and overrides pin single
 * sources or resources; the most specific override wins.
 */
import type { SourceConfig } from '../config/schema.ts';
import { BUDGET_MODE, type ScheduleOverride, type ScheduleSettings } from '../config/schedules.ts';
import { normalizeCron } from '../cron.ts';

/** One stream of one source as the scheduler sees it. */
export interface StreamEntry {
  resource: string;
  /** Incremental checks, or full-refresh passes. */
  kind: 'incremental' | 'full';
}

export type ScheduleMode = { mode: 'budget' } | { mode: 'cron'; cron: string; timeZone: string } | { mode: 'off' };

export interface ScheduledStream {
  /** `source/resource`. */
  key: string;
  source: string;
  resource: string;
  kind: 'incremental' | 'full';
  schedule: ScheduleMode;
  /** Freshness target in minutes, or null. */
  maxStalenessMinutes: number | null;
  /** Position in the source's stream order. */
  order: number;
}

export interface StreamPlanResult {
  streams: ScheduledStream[];
  problems: string[];
}

export function streamKey(source: string, resource: string): string {
  return `${source}/${resource}`;
}

function specificity(o: ScheduleOverride): number {
  return (o.source ? 1 : 0) + (o.resource ? 2 : 0);
}

/** The most specific override setting `field` for a stream, the last of equals. */
export function overrideFor<K extends 'cron' | 'maxStalenessMinutes' | 'timeZone'>(
  overrides: ScheduleOverride[],
  source: string,
  resource: string,
  field: K,
): ScheduleOverride | undefined {
  let best: ScheduleOverride | undefined;
  for (const o of overrides) {
    if (o[field] === undefined) continue;
    if ((o.source && o.source !== source) || (o.resource && o.resource !== resource)) continue;
    if (!best || specificity(o) >= specificity(best)) best = o;
  }
  return best;
}

/** The time zone of a source's cron expressions and change model: its own (ModifiedOn) zone, else UTC. */
export function sourceTimeZone(source: SourceConfig): string {
  return 'timeZone' in source && typeof source.timeZone === 'string' ? source.timeZone : 'UTC';
}

/** The schedule of one stream under the settings. */
export function scheduleOf(settings: ScheduleSettings, source: SourceConfig, entry: StreamEntry): ScheduleMode {
  const o = overrideFor(settings.overrides, source.name, entry.resource, 'cron');
  const expression = o?.cron ?? (entry.kind === 'full' ? settings.full : settings.incremental);
  if (expression === 'off') return { mode: 'off' };
  if (expression === BUDGET_MODE) return { mode: 'budget' };
  return { mode: 'cron', cron: normalizeCron(expression), timeZone: o?.timeZone ?? sourceTimeZone(source) };
}

export function planStreams(
  settings: ScheduleSettings,
  sources: SourceConfig[],
  catalog: (source: SourceConfig) => StreamEntry[],
): StreamPlanResult {
  const result: StreamPlanResult = { streams: [], problems: [] };
  const bySource = new Map(sources.map((s) => [s.name, catalog(s)]));
  settings.overrides.forEach((o, i) => {
    const where = `schedules.overrides[${i}]`;
    if (o.source && !bySource.has(o.source))
      result.problems.push(`${where}: no source named "${o.source}" (known: ${[...bySource.keys()].join(', ') || 'none'})`);
    if (o.resource) {
      const candidates = o.source ? (bySource.get(o.source) ?? []) : [...bySource.values()].flat();
      if (!candidates.some((s) => s.resource === o.resource)) {
        result.problems.push(
          `${where}: ${o.source ? `source "${o.source}" has no resource` : 'no configured source has a resource'} "${o.resource}"`,
        );
      }
    }
  });
  for (const source of sources) {
    (bySource.get(source.name) ?? []).forEach((entry, order) => {
      const target =
        overrideFor(settings.overrides, source.name, entry.resource, 'maxStalenessMinutes')?.maxStalenessMinutes ??
        settings.maxStalenessMinutes ??
        null;
      result.streams.push({
        key: streamKey(source.name, entry.resource),
        source: source.name,
        resource: entry.resource,
        kind: entry.kind,
        schedule: scheduleOf(settings, source, entry),
        maxStalenessMinutes: target,
        order,
      });
    });
  }
  return result;
}
