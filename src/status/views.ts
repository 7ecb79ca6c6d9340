/**
 * What the scheduler sees of each source, for the readers of src/status: per
 * source the plan for the rest of the quota day, and per stream its schedule,
 * freshness, waiting notifications, learned change rate and what it waits
 * for. A serve process reads its scheduler's latest view; any other process
 * (status) observes the same way the scheduler does, without deciding
 * anything. Also: which process runs each stream now.
 */
import pLimit from 'p-limit';
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { heldStreamLocks, streamLockKey } from '../state/locks.ts';
import { loadSourceHealth, type SourceHealth } from '../state/source-health.ts';
import { planStreams, sourceTimeZone, type ScheduledStream } from '../scheduler/plan.ts';
import { observeSource, readSlow, readSlowOf, type SlowRead, type SourceView } from '../scheduler/observe.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { streamsInFlight } from './queues.ts';

/** A view older than this is observed again. */
const VIEW_MAX_AGE_MS = 60_000;
/** Sources observed at once (each observation runs a few queries in parallel on the pool). */
const VIEW_CONCURRENCY = 4;

export async function sourceViews(app: App, config: Config, scheduler?: Scheduler): Promise<SourceView[]> {
  const now = app.ctx.now();
  const settings = config.schedules;
  const planned = planStreams(settings, config.sources, streamCatalog);
  const cached = (name: string) => {
    const view = scheduler?.view(name);
    return view && Math.abs(now.getTime() - view.at.getTime()) < VIEW_MAX_AGE_MS ? view : undefined;
  };
  const stale = new Set(config.sources.filter((s) => !cached(s.name)).map((s) => s.name));
  const zones = new Map(config.sources.map((s) => [s.name, sourceTimeZone(s)]));
  const timeZoneOf = (name: string) => zones.get(name) ?? 'UTC';
  const [inFlight, slow, health] =
    stale.size > 0
      ? await Promise.all([
          streamsInFlight(
            app.pool,
            planned.streams.map((s) => s.key),
          ),
          readSlowOf(
            app.pool,
            planned.streams.filter((s) => stale.has(s.source)),
            now,
            timeZoneOf,
          ),
          loadSourceHealth(app.pool),
        ])
      : [new Set<string>(), new Map<string, SlowRead>(), new Map<string, SourceHealth>()];
  const bySource = new Map<string, ScheduledStream[]>();
  for (const s of planned.streams) {
    const list = bySource.get(s.source) ?? [];
    list.push(s);
    bySource.set(s.source, list);
  }
  // A few sources at a time: each view is several queries, and a fleet has hundreds of sources.
  const limit = pLimit(VIEW_CONCURRENCY);
  return Promise.all(
    config.sources.map(
      (source) =>
        cached(source.name) ??
        limit(() =>
          observeSource(
            {
              pool: app.pool,
              ledgerFor: app.ledgerFor,
              settings,
              health,
              slow: async (name, _at, timeZone) => slow.get(name) ?? readSlow(app.pool, name, now, timeZone),
            },
            source,
            bySource.get(source.name) ?? [],
            now,
            inFlight,
          ),
        ),
    ),
  );
}

/** Per stream: the process (host:pid) running it right now, from its stream lock. */
export async function runningIn(db: Queryable, config: Config): Promise<Map<string, string>> {
  const locks = await heldStreamLocks(db);
  const holders = new Map(locks.map((l) => [l.key, l.holder]));
  const out = new Map<string, string>();
  for (const source of config.sources) {
    for (const stream of streamCatalog(source)) {
      const holder = holders.get(streamLockKey(source.name, stream.resource));
      if (holder) out.set(`${source.name}/${stream.resource}`, holder.replace(/^pmsync lock \S+ /, ''));
    }
  }
  return out;
}
