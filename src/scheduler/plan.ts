/**
 * Which stream runs when: the configuration's `schedules` section applied to
 * every configured source and stream. Pure: no timers, no database.
 */
import type { SourceConfig } from '../config.ts';
import type { SyncMode } from '../sync/types.ts';
import { parseCron } from './crontab.ts';
import type { ScheduleOverride, ScheduleSettings } from './settings.ts';

/** One stream of one source as the scheduler sees it. */
export interface StreamEntry {
  resource: string;
  /** Incremental streams take the `incremental` schedule, full-refresh streams the `full` one. */
  mode: SyncMode;
}

export interface Schedule {
  /** `source/resource`: the name under which fires are remembered in pmsync.schedules. */
  key: string;
  source: string;
  resource: string;
  mode: SyncMode;
  /** Five-field cron expression (macros expanded). */
  cron: string;
  timeZone: string;
  /** Position in the source's stream order; streams firing together run in this order. */
  order: number;
}

export interface SchedulePlan {
  schedules: Schedule[];
  /** Streams with no schedule ("off"), for the start-up log. */
  off: string[];
  problems: string[];
}

export function scheduleKey(source: string, resource: string): string {
  return `${source}/${resource}`;
}

function specificity(o: ScheduleOverride): number {
  return (o.source ? 1 : 0) + (o.resource ? 2 : 0);
}

/** The override that applies to a stream: the most specific one, the last of equals. */
export function overrideFor(overrides: ScheduleOverride[], source: string, resource: string): ScheduleOverride | undefined {
  let best: ScheduleOverride | undefined;
  for (const o of overrides) {
    if ((o.source && o.source !== source) || (o.resource && o.resource !== resource)) continue;
    if (!best || specificity(o) >= specificity(best)) best = o;
  }
  return best;
}

/** The time zone cron expressions of a source are read in: its own (ModifiedOn) zone, else UTC. */
export function sourceTimeZone(source: SourceConfig): string {
  return 'timeZone' in source && typeof source.timeZone === 'string' ? source.timeZone : 'UTC';
}

export function planSchedules(
  settings: ScheduleSettings,
  sources: SourceConfig[],
  catalog: (source: SourceConfig) => StreamEntry[],
): SchedulePlan {
  const plan: SchedulePlan = { schedules: [], off: [], problems: [] };
  const streams = new Map(sources.map((s) => [s.name, catalog(s)]));
  settings.overrides.forEach((o, i) => {
    const where = `schedules.overrides[${i}]`;
    if (o.source && !streams.has(o.source))
      plan.problems.push(`${where}: no source named "${o.source}" (known: ${[...streams.keys()].join(', ') || 'none'})`);
    if (o.resource) {
      const candidates = o.source ? (streams.get(o.source) ?? []) : [...streams.values()].flat();
      if (!candidates.some((s) => s.resource === o.resource)) {
        plan.problems.push(
          `${where}: ${o.source ? `source "${o.source}" has no resource` : 'no configured source has a resource'} "${o.resource}"`,
        );
      }
    }
  });
  for (const source of sources) {
    (streams.get(source.name) ?? []).forEach((stream, order) => {
      const o = overrideFor(settings.overrides, source.name, stream.resource);
      const expression = o?.cron ?? (stream.mode === 'full' ? settings.full : settings.incremental);
      const key = scheduleKey(source.name, stream.resource);
      if (expression === 'off') {
        plan.off.push(key);
        return;
      }
      plan.schedules.push({
        key,
        source: source.name,
        resource: stream.resource,
        mode: stream.mode,
        cron: parseCron(expression).expression,
        timeZone: o?.timeZone ?? sourceTimeZone(source),
        order,
      });
    });
  }
  return plan;
}

/** Schedules that fire at the same moments, grouped so their streams run in the source's order. */
export interface TimerGroup {
  source: string;
  cron: string;
  timeZone: string;
  schedules: Schedule[];
}

export function timerGroups(schedules: Schedule[]): TimerGroup[] {
  const groups = new Map<string, TimerGroup>();
  for (const s of schedules) {
    const id = `${s.source}\u0000${s.cron}\u0000${s.timeZone}`;
    let g = groups.get(id);
    if (!g) {
      g = { source: s.source, cron: s.cron, timeZone: s.timeZone, schedules: [] };
      groups.set(id, g);
    }
    g.schedules.push(s);
  }
  for (const g of groups.values()) g.schedules.sort((a, b) => a.order - b.order);
  return [...groups.values()];
}

/**
 * Whether a schedule missed a fire while no process was up: its most recent
 * fire is later than the last one any process claimed. A schedule never fired
 * before counts as missed, so a first start loads every stream at once instead
 * of waiting for its first tick.
 */
export function missedFire(lastFire: Date | null, mostRecentFire: Date | null): boolean {
  if (mostRecentFire === null) return false;
  return lastFire === null || lastFire.getTime() < mostRecentFire.getTime();
}
