/**
 * What /metrics exports, read when it is scraped: per source its quota,
 * budget, plan, health and streams' freshness (SourceReading), and the
 * database-wide counts (schema drift, quarantine, the queues). Every replica
 * reads the same database, so each reports the same values; src/metrics.ts
 * only turns them into gauges.
 */
import type { App } from '../app.ts';
import type { Purpose } from '../api/http.ts';
import type { Config } from '../config/schema.ts';
import { driftCounts } from '../state/drift.ts';
import { quarantineCounts } from '../state/quarantine.ts';
import { lastSuccesses } from '../state/runs.ts';
import { loadSourceHealth } from '../state/source-health.ts';
import { loadStreamSchedules } from '../state/stream-schedule.ts';
import { stalenessBound, type StreamInput } from '../scheduler/budget.ts';
import { pinnedSpend } from '../scheduler/pinned.ts';
import { sourceTimeZone } from '../scheduler/plan.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { slotOf } from '../time.ts';
import { runQueue, webhookBacklog } from './queues.ts';
import { sourceViews } from './views.ts';

/** One source as the scrape-time gauges see it. */
export interface SourceReading {
  source: string;
  /** Null for sources with no quota (Pro). */
  quota: {
    used: number;
    limit: number;
    /** The API answered 429 and the key is held until its reset. */
    exhausted: boolean;
    budget: number;
    budgetUsed: number;
    byPurpose: Record<Purpose, number>;
  } | null;
  /** Whether the source fails as a whole and is paused (src/scheduler/source-failures.ts). */
  health?: { failing: boolean; paused: boolean; consecutiveFailures: number };
  /** Requests planned for the rest of the quota day, by purpose. */
  planned: { check: number; webhook: number; full: number; backfill: number } | null;
  /**
   * Of those, what the pinned (cron) streams plan, and how many of them go
   * beyond what is left of the budget or the allowance (src/scheduler/pinned.ts).
   */
  pinned?: { planned: number; over: number };
  streams: Array<{
    resource: string;
    lastSuccess: Date | null;
    /** Seconds since every change was last read (end of the last completed window). */
    stalenessSeconds: number | null;
    notificationsWaiting: number;
    /** Whether its freshness target holds today; null when it has none. */
    targetMet: boolean | null;
    /** Changes per hour its learned model expects now. */
    changeRate: number | null;
    /** The longest its staleness may grow now under its rules (target, safety net or floor); null when none applies. */
    stalenessTargetSeconds?: number | null;
  }>;
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

/** The database-wide reads of /metrics besides the sources'. */
export function metricsReads(app: App) {
  return {
    drift: () => driftCounts(app.pool),
    quarantine: () => quarantineCounts(app.pool),
    runQueue: () => runQueue(app.pool),
    webhooks: () => webhookBacklog(app.pool),
  };
}
