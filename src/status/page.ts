/**
 * What serve's status page shows, as plain data (src/serve/status-page.ts
 * renders it): the fleet summary; quarantined records, schema-drift findings
 * and the webhook backlog; then the detail of each source shown (all of them
 * up to INLINE_DETAIL_SOURCES, else the one `?source=NAME` names) with its
 * requests of the last quota days and its streams' latest runs.
 */
import { quotaSettingsFor, type App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { driftFindings } from '../state/drift.ts';
import { quarantineCounts } from '../state/quarantine.ts';
import { requestsPerDay, type DayRequests } from '../state/quota.ts';
import { recentRuns, type RecentRun } from '../state/runs.ts';
import type { RefreshQueueCounts } from '../webhooks/queue.ts';
import { collectStatus, type SourceStatus } from './detail.ts';
import { collectFleet, type FleetSummary } from './fleet.ts';
import { webhookQueue } from './queues.ts';

/** Quota days shown as bars. */
export const HISTORY_DAYS = 14;
/** Runs shown per stream. */
export const RUNS_SHOWN = 5;
/** Up to this many sources, every source's detail is on the page; above, the one `?source=NAME` names. */
export const INLINE_DETAIL_SOURCES = 10;

export interface StatusPageData {
  generatedAt: Date;
  fleet: FleetSummary;
  /** Quarantined records and schema-drift findings of every configured source. */
  attention: { quarantined: number; drift: Array<{ source: string; table: string; kind: string; detail: string }> };
  /** The sources shown in detail. */
  sources: Array<{ status: SourceStatus; days: DayRequests[]; runs: Map<string, RecentRun[]> }>;
  /** `?source=NAME` named no configured source. */
  unknownSource: string | null;
  /** Several sources, and their detail is not inline: each is reached by its link. */
  linkedDetail: boolean;
  /** Null when no source takes webhooks (only Core sources do). */
  webhooks: RefreshQueueCounts | null;
}

export async function collectStatusPage(
  app: App,
  config: Config,
  scheduler?: Scheduler,
  options: { source?: string } = {},
): Promise<StatusPageData> {
  const names = config.sources.map((s) => s.name);
  const inline = config.sources.length <= INLINE_DETAIL_SOURCES;
  const named = options.source ? config.sources.filter((s) => s.name === options.source) : [];
  const detailed = named.length > 0 ? named : inline ? config.sources : [];
  const [fleet, quarantined, drift, statuses] = await Promise.all([
    collectFleet(app, config, { scheduler }),
    quarantineCounts(app.pool),
    driftFindings(app.pool, names),
    detailed.length > 0 ? collectStatus(app, { ...config, sources: detailed }, { scheduler }) : Promise.resolve([]),
  ]);
  const sources = await Promise.all(
    statuses.map(async (status) => {
      const source = config.sources.find((s) => s.name === status.source)!;
      const snap = await app.ledgerFor(source).snapshot();
      const [days, runs] = await Promise.all([
        requestsPerDay(app.pool, quotaSettingsFor(source).keyId, snap.day, HISTORY_DAYS),
        recentRuns(app.pool, source.name, RUNS_SHOWN),
      ]);
      return { status, days, runs };
    }),
  );
  const webhooks = await webhookQueue(app.pool, config);
  const configured = new Set(names);
  return {
    generatedAt: app.ctx.now(),
    fleet,
    attention: {
      quarantined: quarantined.filter((q) => configured.has(q.source)).reduce((n, q) => n + q.count, 0),
      drift: [...drift.entries()].flatMap(([key, findings]) =>
        findings.map((f) => ({ source: key.slice(0, key.length - f.table.length - 1), table: f.table, kind: f.kind, detail: f.detail })),
      ),
    },
    sources,
    unknownSource: options.source && named.length === 0 ? options.source : null,
    linkedDetail: !inline,
    webhooks,
  };
}
