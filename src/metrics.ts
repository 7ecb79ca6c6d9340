/**
 * Prometheus metrics of `pmsync serve`, in a registry of their own (no global
 * default registry: tests and several servers in one process stay apart).
 *
 * Counters count what this process did since it started; gauges read shared
 * state (quota ledger, run history, webhook queue) when scraped, so every
 * replica reports the same database-wide values for those.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PmsyncError } from './errors.ts';
import type { SourceResult } from './sync/sync-source.ts';

export interface QuotaReading {
  source: string;
  used: number;
  limit: number;
  /** The API answered 429 and the key is held until its reset. */
  exhausted: boolean;
}

/** Where the scrape-time gauges read from. */
export interface MetricsReaders {
  quota(): Promise<QuotaReading[]>;
  lastSuccess(): Promise<Array<{ source: string; resource: string; at: Date }>>;
  running(): Array<{ source: string; resource: string }>;
  /** Absent when no webhook receiver runs. */
  webhooks?: () => Promise<{ backlog: number; deadLetters: number }>;
  onCollectError?: (err: unknown) => void;
}

const RUN_BUCKETS = [1, 5, 15, 60, 300, 900, 1800, 3600, 10_800];

export class Metrics {
  readonly registry = new Registry();
  readonly requests: Counter<'source' | 'resource'>;
  readonly rows: Counter<'source' | 'resource' | 'outcome'>;
  readonly runs: Counter<'source' | 'resource' | 'status'>;
  readonly runDuration: Histogram<'source' | 'resource' | 'mode' | 'status'>;
  readonly errors: Counter<'source' | 'code'>;
  readonly ticks: Counter<'source' | 'resource' | 'outcome'>;

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
      help: 'API requests sent by sync runs of this process',
      labelNames: ['source', 'resource'],
      registers,
    });
    this.rows = new Counter({
      name: 'pmsync_rows_total',
      help: 'Records written by sync runs of this process, by outcome (inserted, updated, unchanged, rejected)',
      labelNames: ['source', 'resource', 'outcome'],
      registers,
    });
    this.runs = new Counter({
      name: 'pmsync_runs_total',
      help: 'Stream runs of this process by final status',
      labelNames: ['source', 'resource', 'status'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'pmsync_run_duration_seconds',
      help: 'Duration of stream runs of this process',
      labelNames: ['source', 'resource', 'mode', 'status'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.errors = new Counter({
      name: 'pmsync_errors_total',
      help: 'Failed stream runs of this process by error code',
      labelNames: ['source', 'code'],
      registers,
    });
    this.ticks = new Counter({
      name: 'pmsync_schedule_ticks_total',
      help: 'Schedule fires seen by this process: queued, skipped_running, locked, not_elected, paused, stopping',
      labelNames: ['source', 'resource', 'outcome'],
      registers,
    });

    const quotaLeft = new Gauge({
      name: 'pmsync_quota_remaining',
      help: 'Requests left on the current quota day (0 while the API answers 429)',
      labelNames: ['source'],
      registers,
    });
    const quotaUsed = new Gauge({
      name: 'pmsync_quota_used',
      help: 'Requests counted on the current quota day, by every pmsync process',
      labelNames: ['source'],
      registers,
    });
    const quotaLimit = new Gauge({ name: 'pmsync_quota_limit', help: 'Configured daily request quota', labelNames: ['source'], registers });
    let quotaPending: Promise<QuotaReading[]> | null = null;
    // The three quota gauges share one read per scrape.
    const readQuota = () => (quotaPending ??= readers.quota().finally(() => setTimeout(() => (quotaPending = null), 0)));
    const quotaGauge = (g: Gauge<'source'>, value: (q: QuotaReading) => number) =>
      Object.assign(g, {
        collect: () =>
          safely(async () => {
            g.reset();
            for (const q of await readQuota()) g.set({ source: q.source }, value(q));
          }),
      });
    quotaGauge(quotaLeft, (q) => (q.exhausted ? 0 : Math.max(0, q.limit - q.used)));
    quotaGauge(quotaUsed, (q) => q.used);
    quotaGauge(quotaLimit, (q) => q.limit);

    new Gauge({
      name: 'pmsync_last_success_timestamp_seconds',
      help: 'End of the last successful run per stream (any process), as a Unix time',
      labelNames: ['source', 'resource'],
      registers,
      async collect() {
        await safely(async () => {
          this.reset();
          for (const r of await readers.lastSuccess()) this.set({ source: r.source, resource: r.resource }, r.at.getTime() / 1000);
        });
      },
    });
    new Gauge({
      name: 'pmsync_runs_in_progress',
      help: 'Stream runs queued or running in this process',
      labelNames: ['source', 'resource'],
      registers,
      collect() {
        this.reset();
        for (const r of readers.running()) this.set({ source: r.source, resource: r.resource }, 1);
      },
    });
    if (readers.webhooks) {
      const read = readers.webhooks;
      let pending: Promise<{ backlog: number; deadLetters: number }> | null = null;
      const once = () => (pending ??= read().finally(() => setTimeout(() => (pending = null), 0)));
      new Gauge({
        name: 'pmsync_webhook_backlog',
        help: 'Webhook refreshes waiting or being retried',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).backlog));
        },
      });
      new Gauge({
        name: 'pmsync_webhook_dead_letters',
        help: 'Webhook refreshes that failed every attempt',
        registers,
        async collect() {
          await safely(async () => this.set((await once()).deadLetters));
        },
      });
    }
    collectDefaultMetrics({ register: this.registry, prefix: 'pmsync_' });
  }

  /** Counts one scheduled run of one stream (syncSource narrowed to that stream) that took `seconds`. */
  recordStream(stream: { source: string; resource: string; mode: string }, result: SourceResult, seconds: number): void {
    const labels = { source: stream.source, resource: stream.resource };
    const run = result.runs.find((r) => r.resource === stream.resource);
    if (run?.runId === null) return; // skipped: locked elsewhere or nothing to read
    const error = result.failures.find((f) => f.resource === stream.resource)?.error ?? result.fatal;
    const status = run?.status ?? statusOf(error);
    if (run) {
      this.requests.inc(labels, run.requests);
      for (const outcome of ['inserted', 'updated', 'unchanged', 'rejected'] as const) this.rows.inc({ ...labels, outcome }, run[outcome]);
    }
    if (error) this.errors.inc({ source: stream.source, code: codeOf(error) });
    this.runs.inc({ ...labels, status });
    this.runDuration.observe({ ...labels, mode: run?.mode ?? stream.mode, status }, seconds);
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
