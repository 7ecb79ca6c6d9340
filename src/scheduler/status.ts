/**
 * What the scheduler sees, for `pmsync status` and `/metrics`: per source the
 * requests spent today by purpose, the plan for the rest of the quota day,
 * and per stream its schedule, freshness, waiting notifications, learned
 * change rate and what it waits for. A serve process reads its scheduler's
 * latest view; any other process (status) observes the same way the
 * scheduler does, without deciding anything.
 */
import pLimit from 'p-limit';
import type { App } from '../app.ts';
import type { Config } from '../config-schema.ts';
import type { Queryable } from '../db/pool.ts';
import type { SourceReading } from '../metrics.ts';
import { streamCatalog } from './catalog.ts';
import { slotOf } from '../time.ts';
import { runsInFlight } from './dispatch.ts';
import { heldStreamLocks, streamLockKey } from '../state/locks.ts';
import { loadSourceHealth, type SourceHealth } from '../state/source-health.ts';
import { loadStreamSchedules } from '../state/stream-schedule.ts';
import { planStreams, sourceTimeZone, type ScheduledStream } from './plan.ts';
import { observeSource, readSlow, readSlowOf, type Scheduler, type SlowRead, type SourceView } from './scheduler.ts';
import { stalenessBound, type StreamInput } from './budget.ts';
import { lastSuccesses } from '../state/runs.ts';
import { pinnedSpend } from './pinned.ts';

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
          runsInFlight(
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

/** The metrics' reading of every source. */
export async function sourceReadings(app: App, config: Config, scheduler?: Scheduler): Promise<SourceReading[]> {
  // Health is read fresh: a cached view may be a tick old.
  const [views, lastSuccess, health] = await Promise.all([
    sourceViews(app, config, scheduler),
    lastSuccesses(app.pool),
    loadSourceHealth(app.pool),
  ]);
  return Promise.all(
    views.map(async (v) => {
      const source = config.sources.find((s) => s.name === v.source)!;
      const hasQuota = source.kind !== 'pro';
      const slot = slotOf(v.at.getTime(), sourceTimeZone(source));
      // The plan may be a tick old; the ledger and each stream's last check are read fresh.
      const [q, rows] = await Promise.all([app.ledgerFor(source).snapshot(), loadStreamSchedules(app.pool, source.name)]);
      const now = app.ctx.now();
      const bound = (input: StreamInput) => {
        const minutes = stalenessBound(input, v.input.settings, v.plan.stretch, now, v.input.timeZone);
        return minutes === null ? null : minutes * 60;
      };
      const h = health.get(v.source);
      const pinned = pinnedSpend(v.input.pinned, q, hasQuota);
      return {
        source: v.source,
        health: {
          failing: Boolean(h?.failingSince),
          paused: Boolean(h?.pausedUntil && h.pausedUntil > now),
          consecutiveFailures: h?.consecutiveFailures ?? 0,
        },
        quota: hasQuota
          ? {
              used: q.used,
              limit: q.dailyLimit,
              exhausted: q.exhaustedUntil !== null,
              budget: q.budget,
              budgetUsed: q.budgetUsed,
              byPurpose: q.byPurpose,
            }
          : null,
        planned: v.plan.planned,
        pinned: { planned: pinned?.planned ?? 0, over: pinned?.over ?? 0 },
        streams: v.streams.map((s) => {
          const input = v.inputs.get(s.resource);
          const lastCheck = rows.get(s.resource)?.lastCheckAt ?? input?.lastCheckAt ?? null;
          return {
            resource: s.resource,
            lastSuccess: lastSuccess.get(s.key) ?? null,
            stalenessSeconds: lastCheck ? Math.max(0, (now.getTime() - lastCheck.getTime()) / 1000) : null,
            notificationsWaiting: input?.notified.count ?? 0,
            targetMet: v.plan.streams.find((p) => p.resource === s.resource)?.targetHonoured ?? null,
            changeRate: input ? input.rates[slot]! : null,
            stalenessTargetSeconds: input ? bound(input) : null,
          };
        }),
      };
    }),
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
