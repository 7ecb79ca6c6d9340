/**
 * What the scheduler sees of each source, for the readers of src/status: per
 * source the plan for the rest of the quota day, and per stream its schedule,
 * freshness, waiting notifications, learned change rate and what it waits
 * for. A serve process reads its scheduler's latest view; any other process
 * (status) observes the same way the scheduler does, without deciding
 * anything. Also: which process runs each stream now.
 */
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { heldStreamLocks, streamLockKey } from '../state/locks.ts';
import { planStreams, sourceTimeZone, type ScheduledStream } from '../scheduler/plan.ts';
import { readModels, readSources, viewAt, type SourceView } from '../scheduler/observe.ts';
import { VIEW_KEPT_MS, type Scheduler } from '../scheduler/scheduler.ts';
import { streamsInFlight } from './queues.ts';

/** Sources read in one batch (each batch is one query per kind of state): bounds what a large fleet holds at once. */
const VIEW_BATCH = 500;

export async function sourceViews(app: App, config: Config, scheduler?: Scheduler): Promise<SourceView[]> {
  const now = app.ctx.now();
  const settings = config.schedules;
  const planned = planStreams(settings, config.sources, streamCatalog);
  const cached = (name: string) => {
    const view = scheduler?.view(name);
    return view && Math.abs(now.getTime() - view.at.getTime()) < VIEW_KEPT_MS ? view : undefined;
  };
  // Each kept view is taken once: the scheduler lets go of one during a tick (a source planned afresh, or not
  // dispatching at its wake), which may run while the sources below are read, and a view asked for again after that
  // was neither kept nor read (a status page answered 500 while a reloaded source's first pass ran).
  const kept = new Map(config.sources.map((s) => [s.name, cached(s.name)]));
  const stale = config.sources.filter((s) => !kept.get(s.name));
  const zones = new Map(config.sources.map((s) => [s.name, sourceTimeZone(s)]));
  const bySource = new Map<string, ScheduledStream[]>();
  for (const s of planned.streams) {
    const list = bySource.get(s.source) ?? [];
    list.push(s);
    bySource.set(s.source, list);
  }
  const observed = new Map<string, SourceView>();
  if (stale.length > 0) {
    const inFlight = await streamsInFlight(
      app.pool,
      planned.streams.map((s) => s.key),
    );
    const deps = { pool: app.pool, ledgerFor: app.ledgerFor };
    for (let i = 0; i < stale.length; i += VIEW_BATCH) {
      const batch = stale.slice(i, i + VIEW_BATCH);
      const streams = batch.flatMap((s) => bySource.get(s.name) ?? []);
      const [readings, models] = await Promise.all([
        readSources(deps, batch, streams, now),
        readModels(app.pool, streams, now, (name) => zones.get(name) ?? 'UTC'),
      ]);
      for (const source of batch) {
        observed.set(
          source.name,
          viewAt(
            source,
            bySource.get(source.name) ?? [],
            readings.get(source.name)!,
            models.get(source.name) ?? new Map(),
            now,
            inFlight,
            settings,
          ),
        );
      }
    }
  }
  return config.sources.map((source) => kept.get(source.name) ?? observed.get(source.name)!);
}

/** Per stream: the process (host:pid) running it right now, from its stream lock. */
export async function runningIn(db: Queryable, config: Config): Promise<Map<string, string>> {
  const locks = await heldStreamLocks(db);
  const holders = new Map(locks.map((l) => [l.key, l.holder]));
  const out = new Map<string, string>();
  for (const source of config.sources) {
    for (const stream of streamCatalog(source)) {
      const holder = holders.get(streamLockKey(source.name, stream.resource));
      // A lock of its own names the stream and the holder; a serve replica's lock session names the holder.
      if (holder) out.set(`${source.name}/${stream.resource}`, holder.replace(/^pmsync lock \S+ /, '').replace(/^pmsync locks /, ''));
    }
  }
  return out;
}
