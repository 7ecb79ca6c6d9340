/**
 * Prometheus metrics of `pmsync serve`, in a registry of their own (no global
 * default registry: tests and several servers in one process stay apart).
 *
 * Counters count what this process did since it started; gauges read shared
 * state (quota ledger, the scheduler's view, run history, webhook queue) when
 * scraped, so every replica reports the same database-wide values for those.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PURPOSES } from './api/http.ts';
import { PmsyncError } from './errors.ts';
import { SCHEDULING_SHARDS } from './state/locks.ts';
import type { SourceResult } from './sync/sync-source.ts';
import type { SourceReading } from './status/readings.ts';

/** Where the scrape-time gauges read from. */
export interface MetricsReaders {
  sources(): Promise<SourceReading[]>;
  running(): Array<{ source: string; resource: string }>;
  /** Absent when no webhook receiver runs. */
  webhooks?: () => Promise<{ backlog: number; deadLetters: number }>;
  /** Whether this replica is ready (what /readyz answers). */
  ready?: () => Promise<boolean>;
  /** The run queue across replicas: runs waiting to start, and how long the oldest has waited. */
  runQueue?: () => Promise<{ waiting: number; oldestWaitSeconds: number }>;
  /** How many scheduling shards this replica decides now (src/state/locks.ts). */
  shards?: () => number;
  onCollectError?: (err: unknown) => void;
}

const RUN_BUCKETS = [1, 5, 15, 60, 300, 900, 1800, 3600, 10_800];

export class Metrics {
  readonly registry = new Registry();
  readonly requests: Counter<'source' | 'resource'>;
  readonly rows: Counter<'source' | 'resource' | 'outcome'>;
  readonly runs: Counter<'source' | 'resource' | 'status'>;
  readonly runDuration: Histogram<'resource' | 'mode' | 'status'>;
  readonly errors: Counter<'source' | 'code'>;
  readonly dispatches: Counter<'source' | 'resource' | 'purpose' | 'reason'>;
  readonly ticks: Histogram;

  constructor(readers: MetricsReaders) {
    const registers = [this.registry];
    const safely = async (fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        readers.onCollectError?.(err);
      }
    };
    this.requests = new Counter({
      name: 'pmsync_requests_total',
      help: 'API requests sent by runs of this process',
      labelNames: ['source', 'resource'],
      registers,
    });
    this.rows = new Counter({
      name: 'pmsync_rows_total',
      help: 'Records written by runs of this process, by outcome (inserted, updated, unchanged, rejected)',
      labelNames: ['source', 'resource', 'outcome'],
      registers,
    });
    this.runs = new Counter({
      name: 'pmsync_runs_total',
      help: 'Stream runs of this process by final status',
      labelNames: ['source', 'resource', 'status'],
      registers,
    });
    // No source label: a histogram is a dozen series per label set, and over a fleet of a thousand sources the
    // per-source ones were the largest part of a replica's metrics (bench/RESULTS.md, "What a replica's memory
    // holds"). A source's run durations are in pmsync.runs.
    this.runDuration = new Histogram({
      name: 'pmsync_run_duration_seconds',
      help: 'Duration of stream runs of this process, over every source',
      labelNames: ['resource', 'mode', 'status'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.errors = new Counter({
      name: 'pmsync_errors_total',
      help: 'Failed stream runs of this process by error code',
      labelNames: ['source', 'code'],
      registers,
    });
    this.dispatches = new Counter({
      name: 'pmsync_dispatches_total',
      help: 'Runs this process dispatched, by purpose (check, backfill, webhook, full) and reason (rate, evidence, notified, floor, safety-net, cron, ...)',
      labelNames: ['source', 'resource', 'purpose', 'reason'],
      registers,
    });

    // Every gauge below shares one read of the sources per scrape.
    let pending: Promise<SourceReading[]> | null = null;
    const read = () => (pending ??= readers.sources().finally(() => setTimeout(() => (pending = null), 0)));
    const gauge = <L extends string>(name: string, help: string, labelNames: L[], fill: (g: Gauge<L>, readings: SourceReading[]) => void) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          await safely(async () => {
            const readings = await read();
            this.reset();
            fill(this, readings);
          });
        },
      });
    const withQuota = (rs: SourceReading[]) => rs.flatMap((r) => (r.quota ? [{ source: r.source, q: r.quota }] : []));
    const streams = (rs: SourceReading[]) =>
      rs.flatMap((r) => r.streams.map((s) => ({ labels: { source: r.source, resource: s.resource }, s })));

    gauge('pmsync_quota_remaining', 'Requests left on the current quota day (0 while the API answers 429)', ['source'], (g, rs) => {
      for (const { source, q } of withQuota(rs)) g.set({ source }, q.exhausted ? 0 : Math.max(0, q.limit - q.used));
    });
    gauge('pmsync_quota_used', 'Requests counted on the current quota day, by every pmsync process', ['source'], (g, rs) => {
      for (const { source, q } of withQuota(rs)) g.set({ source }, q.used);
    });
    gauge('pmsync_quota_limit', 'Configured daily request quota', ['source'], (g, rs) => {
      for (const { source, q } of withQuota(rs)) g.set({ source }, q.limit);
    });
    gauge(
      'pmsync_budget',
      'Requests a quota day that checks, webhook-triggered fetches and full refreshes may spend together',
      ['source'],
      (g, rs) => {
        for (const { source, q } of withQuota(rs)) g.set({ source }, q.budget);
      },
    );
    gauge('pmsync_budget_used', 'Requests of the budget spent on the current quota day', ['source'], (g, rs) => {
      for (const { source, q } of withQuota(rs)) g.set({ source }, q.budgetUsed);
    });
    gauge(
      'pmsync_requests_today',
      'Requests counted on the current quota day by purpose (check, backfill, webhook, resync, full), by every process',
      ['source', 'purpose'],
      (g, rs) => {
        for (const { source, q } of withQuota(rs)) for (const purpose of PURPOSES) g.set({ source, purpose }, q.byPurpose[purpose]);
      },
    );
    gauge(
      'pmsync_requests_planned',
      'Requests the scheduler plans to send for the rest of the quota day, by purpose',
      ['source', 'purpose'],
      (g, rs) => {
        for (const r of rs) if (r.planned) for (const [purpose, n] of Object.entries(r.planned)) g.set({ source: r.source, purpose }, n);
      },
    );
    gauge(
      'pmsync_requests_planned_pinned',
      'Requests the pinned (cron) streams plan to send for the rest of the quota day, whatever the budget (part of pmsync_requests_planned)',
      ['source'],
      (g, rs) => {
        for (const r of rs) if (r.pinned) g.set({ source: r.source }, r.pinned.planned);
      },
    );
    gauge(
      'pmsync_pinned_over_budget',
      'Requests the pinned (cron) streams plan for the rest of the quota day beyond what is left of the budget, or of the allowance when less; 0 when they fit',
      ['source'],
      (g, rs) => {
        for (const r of rs) if (r.pinned) g.set({ source: r.source }, r.pinned.over);
      },
    );
    gauge(
      'pmsync_source_failing',
      '1 while the source fails as a whole (refused credentials, server errors, timeouts, unreachable) since its last success, else 0',
      ['source'],
      (g, rs) => {
        for (const r of rs) if (r.health) g.set({ source: r.source }, r.health.failing ? 1 : 0);
      },
    );
    gauge(
      'pmsync_source_paused',
      '1 while nothing is sent to the source because of its failures (backoff), else 0',
      ['source'],
      (g, rs) => {
        for (const r of rs) if (r.health) g.set({ source: r.source }, r.health.paused ? 1 : 0);
      },
    );
    gauge('pmsync_source_consecutive_failures', 'Failures of the source since its last success, one per pause', ['source'], (g, rs) => {
      for (const r of rs) if (r.health) g.set({ source: r.source }, r.health.consecutiveFailures);
    });
    gauge(
      'pmsync_last_success_timestamp_seconds',
      'End of the last successful run per stream (any process), as a Unix time',
      ['source', 'resource'],
      (g, rs) => {
        for (const { labels, s } of streams(rs)) if (s.lastSuccess) g.set(labels, s.lastSuccess.getTime() / 1000);
      },
    );
    gauge('pmsync_stream_staleness_seconds', 'Seconds since every change of the stream was last read', ['source', 'resource'], (g, rs) => {
      for (const { labels, s } of streams(rs)) if (s.stalenessSeconds !== null) g.set(labels, s.stalenessSeconds);
    });
    gauge(
      'pmsync_stream_notifications_waiting',
      'Webhook notifications of the stream not yet read by a check',
      ['source', 'resource'],
      (g, rs) => {
        for (const { labels, s } of streams(rs)) g.set(labels, s.notificationsWaiting);
      },
    );
    gauge(
      'pmsync_stream_target_met',
      "1 while the stream's freshness target (maxStalenessMinutes, or the bound on notified changes) fits the budget, 0 when it cannot be honoured",
      ['source', 'resource'],
      (g, rs) => {
        for (const { labels, s } of streams(rs)) if (s.targetMet !== null) g.set(labels, s.targetMet ? 1 : 0);
      },
    );
    gauge(
      'pmsync_stream_staleness_target_seconds',
      'The longest the stream may stay stale now under its rules: its freshness target in its busy hours, the safety net when fed by webhooks, else the floor',
      ['source', 'resource'],
      (g, rs) => {
        for (const { labels, s } of streams(rs)) if (s.stalenessTargetSeconds != null) g.set(labels, s.stalenessTargetSeconds);
      },
    );
    gauge('pmsync_stream_change_rate', "Changes per hour the stream's learned model expects now", ['source', 'resource'], (g, rs) => {
      for (const { labels, s } of streams(rs)) if (s.changeRate !== null) g.set(labels, s.changeRate);
    });
    new Gauge({
      name: 'pmsync_runs_in_progress',
      help: 'Stream runs running in this process',
      labelNames: ['source', 'resource'],
      registers,
      collect() {
        this.reset();
        for (const r of readers.running()) this.set({ source: r.source, resource: r.resource }, 1);
      },
    });
    if (readers.webhooks) {
      const readWebhooks = readers.webhooks;
      let pendingWebhooks: Promise<{ backlog: number; deadLetters: number }> | null = null;
      const once = () => (pendingWebhooks ??= readWebhooks().finally(() => setTimeout(() => (pendingWebhooks = null), 0)));
      new Gauge({
        name: 'pmsync_webhook_backlog',
        help: 'Webhook record refreshes waiting or being retried',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).backlog));
        },
      });
      new Gauge({
        name: 'pmsync_webhook_dead_letters',
        help: 'Webhook record refreshes that failed every attempt',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).deadLetters));
        },
      });
    }
    this.ticks = new Histogram({
      name: 'pmsync_scheduler_tick_seconds',
      help: 'Time a scheduler tick took in this replica, deciding and dispatching for the sources of the shards it holds',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    if (readers.shards) {
      const shards = readers.shards;
      new Gauge({
        name: 'pmsync_scheduler_shards',
        help: `Scheduling shards this replica decides (of ${SCHEDULING_SHARDS}): their sources' runs are dispatched by it`,
        registers,
        collect() {
          this.set(shards());
        },
      });
    }
    if (readers.runQueue) {
      const readQueue = readers.runQueue;
      let pendingQueue: Promise<{ waiting: number; oldestWaitSeconds: number }> | null = null;
      const once = () => (pendingQueue ??= readQueue().finally(() => setTimeout(() => (pendingQueue = null), 0)));
      new Gauge({
        name: 'pmsync_run_queue_waiting',
        help: 'Stream runs queued and not yet started, across replicas',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).waiting));
        },
      });
      new Gauge({
        name: 'pmsync_run_queue_oldest_wait_seconds',
        help: 'How long the oldest queued run has waited for a free worker, across replicas (0 when none waits)',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).oldestWaitSeconds));
        },
      });
    }
    if (readers.ready) {
      const ready = readers.ready;
      new Gauge({
        name: 'pmsync_ready',
        help: '1 while this replica is ready (what /readyz answers: database reachable, migrations applied, not stopping), else 0',
        registers,
        async collect() {
          this.set((await ready().catch(() => false)) ? 1 : 0);
        },
      });
    }
    collectDefaultMetrics({ register: this.registry, prefix: 'pmsync_' });
  }

  /** Counts one run of one stream (syncSource narrowed to that stream) that took `seconds`. */
  recordStream(stream: { source: string; resource: string; mode: string }, result: SourceResult, seconds: number): void {
    const labels = { source: stream.source, resource: stream.resource };
    const run = result.runs.find((r) => r.resource === stream.resource);
    if (run?.runId === null) return; // skipped: locked elsewhere or nothing to read
    const error = result.failures.find((f) => f.resource === stream.resource)?.error ?? result.fatal ?? result.budgetSpent;
    const status = run?.status ?? statusOf(error);
    if (run) {
      this.requests.inc(labels, run.requests);
      for (const outcome of ['inserted', 'updated', 'unchanged', 'rejected'] as const) this.rows.inc({ ...labels, outcome }, run[outcome]);
    }
    if (error) this.errors.inc({ source: stream.source, code: codeOf(error) });
    this.runs.inc({ ...labels, status });
    this.runDuration.observe({ resource: stream.resource, mode: run?.mode ?? stream.mode, status }, seconds);
  }

  /**
   * Adds the schema-drift gauge: findings per source, table and kind
   * (unmapped_field, personal_field, empty_column, disappeared_field, type_changed), read from
   * pmsync.schema_drift when scraped, so every replica reports the same.
   */
  watchDrift(
    read: () => Promise<Array<{ source: string; table: string; kind: string; count: number }>>,
    onError?: (err: unknown) => void,
  ): void {
    new Gauge({
      name: 'pmsync_schema_drift_findings',
      help: 'Schema-drift findings per source, table and kind (see pmsync drift)',
      labelNames: ['source', 'table', 'kind'],
      registers: [this.registry],
      async collect() {
        try {
          const counts = await read();
          this.reset();
          for (const c of counts) this.set({ source: c.source, table: c.table, kind: c.kind }, c.count);
        } catch (err) {
          onError?.(err);
        }
      },
    });
  }

  /**
   * Adds the quarantine gauge: records set aside per source and resource,
   * read from pmsync.quarantine when scraped, so every replica reports the same.
   */
  watchQuarantine(read: () => Promise<Array<{ source: string; resource: string; count: number }>>, onError?: (err: unknown) => void): void {
    new Gauge({
      name: 'pmsync_quarantined_records',
      help: 'Records set aside in pmsync.quarantine (failed validation), per source and resource',
      labelNames: ['source', 'resource'],
      registers: [this.registry],
      async collect() {
        try {
          const counts = await read();
          this.reset();
          for (const c of counts) this.set({ source: c.source, resource: c.resource }, c.count);
        } catch (err) {
          onError?.(err);
        }
      },
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

function statusOf(err: unknown): string {
  const code = codeOf(err);
  return code === 'QUOTA_EXHAUSTED' ? 'quota_exhausted' : code === 'SHUTDOWN' ? 'interrupted' : 'failed';
}

function codeOf(err: unknown): string {
  return err instanceof PmsyncError ? err.code : 'UNEXPECTED';
}
