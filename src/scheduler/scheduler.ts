/**
 * The scheduler of `pmsync serve`: at every tick it decides which streams to
 * run now and dispatches them to the run queue (src/scheduler/dispatch.ts),
 * safely with any number of replicas on one database.
 *
 * - Streams scheduled by budget run when the plan says so
 *   (src/scheduler/budget.ts): the source's change model, its webhook
 *   notifications, its budget left today and every stream's freshness.
 * - Streams pinned to a cron expression run at each of its fires. A fire
 *   missed while no process was up runs once at the next tick (catch-up),
 *   unless catch-up is off.
 * - Unfinished windows (first passes, interrupted runs) are backfills: they
 *   run at once, from the day's allowance, until it is used up.
 * - One decider: with `leadership`, only the replica holding the scheduling
 *   lock (src/state/locks.ts) decides at a tick; the others work the queue.
 *   If it dies, the next replica to tick takes over.
 * - One dispatch per decision: a replica claims a run with one conditional
 *   UPDATE of the stream's last_fire_at (src/state/stream-schedule.ts) before
 *   queueing it; of replicas deciding at once (a leadership handover), one wins.
 * - A source that fails as a whole (refused credentials, a failing or
 *   unreachable server, after the client's retries) is paused with a growing
 *   backoff (src/scheduler/source-failures.ts): while paused nothing of it is
 *   dispatched; its notifications and missed cron fires wait for the end of
 *   the pause. Its failing and its recovery are logged once.
 * - Time is the injected clock: a test or benchmark calls tick() itself and
 *   plays a whole practice day in seconds. start() ticks every tickSeconds.
 * - A reloaded configuration (applyConfig) takes effect at the next tick: a
 *   removed source's streams are no longer scheduled, and a new source's
 *   streams start as first passes (backfills).
 */
import pLimit from 'p-limit';
import type { Config, SourceConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import type { QuotaLedger } from '../state/quota.ts';
import { loadSourceHealth, markReported, type SourceHealth } from '../state/source-health.ts';
import { claimDispatch, loadStreamSchedules, setWarning, type StreamScheduleRow } from '../state/stream-schedule.ts';
import type { Leadership } from '../state/locks.ts';
import { previousFire } from '../cron.ts';
import { runKey, type Dispatcher, type RunJob } from './dispatch.ts';
import type { SourcePlan } from './budget.ts';
import { planStreams, type ScheduledStream, type StreamEntry } from './plan.ts';
import type { ScheduleSettings } from '../config/schedules.ts';
import { localWeekday, observeSource, readSlow, type SlowRead, type SourceView } from './observe.ts';

/** Change models and check costs change slowly: they are re-read at most this often. */
const SLOW_READ_MS = 60_000;
/**
 * Sources decided at once within a tick. A source's decision is a handful of
 * short queries; overlapping two halves a tick's wall time over hundreds of
 * sources while leaving the pool's other connections to the runs.
 */
const SOURCES_AT_ONCE = 2;

export interface SchedulerDeps {
  pool: Pool;
  logger: Logger;
  now: () => Date;
  /** Names this process in stream_schedule.last_fire_by. */
  holder: string;
  config: Config;
  catalog: (source: SourceConfig) => StreamEntry[];
  ledgerFor(source: SourceConfig): QuotaLedger;
  dispatcher: Pick<Dispatcher, 'dispatch' | 'inFlight'>;
  onDispatch?: (job: RunJob) => void;
  /** Decide only while this replica leads; every tick decides without it. */
  leadership?: Leadership;
  /** Reports each tick this replica decided: how long it took and how many runs it dispatched. */
  onTick?: (seconds: number, dispatched: number) => void;
}

export class Scheduler {
  private readonly deps: SchedulerDeps;
  private config: Config;
  private settings: ScheduleSettings;
  private planned: ScheduledStream[];
  private readonly views = new Map<string, SourceView>();
  private readonly slow = new Map<string, SlowRead>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<RunJob[]> | null = null;
  private stopped = false;

  constructor(deps: SchedulerDeps) {
    this.deps = deps;
    this.config = deps.config;
    this.settings = deps.config.schedules;
    this.planned = this.plan(deps.config);
  }

  /** Every stream of every source, with its schedule. */
  get streams(): ScheduledStream[] {
    return this.planned;
  }

  /**
   * Takes a new configuration from the next tick on: its sources, their
   * streams and schedules. Throws a ConfigError, changing nothing, when a
   * schedule override names what the new configuration lacks.
   */
  applyConfig(config: Config): void {
    const planned = this.plan(config);
    const retick = config.schedules.tickSeconds !== this.settings.tickSeconds;
    this.config = config;
    this.settings = config.schedules;
    this.planned = planned;
    const names = new Set(config.sources.map((s) => s.name));
    for (const name of this.views.keys()) if (!names.has(name)) this.views.delete(name);
    for (const name of this.slow.keys()) if (!names.has(name)) this.slow.delete(name);
    if (retick && this.timer && !this.stopped) {
      clearInterval(this.timer);
      this.timer = setInterval(() => this.runTick(), this.settings.tickSeconds * 1000);
    }
  }

  private plan(config: Config): ScheduledStream[] {
    const planned = planStreams(config.schedules, config.sources, this.deps.catalog);
    if (planned.problems.length > 0) throw new ConfigError(planned.problems);
    return planned.streams;
  }

  /**
   * Prepares the first tick. With catch-up off, every pinned fire missed while
   * no process was up is marked as done without running.
   */
  async start(): Promise<void> {
    if (this.settings.catchUp) return;
    const now = this.deps.now();
    for (const source of this.config.sources) {
      const rows = await loadStreamSchedules(this.deps.pool, source.name);
      for (const s of this.streams.filter((x) => x.source === source.name && x.schedule.mode === 'cron')) {
        if (s.schedule.mode !== 'cron') continue;
        const last = rows.get(s.resource)?.lastFireAt ?? null;
        const recent = previousFire(s.schedule.cron, s.schedule.timeZone, now);
        if (recent && (!last || last < recent)) {
          await claimDispatch(this.deps.pool, {
            source: s.source,
            resource: s.resource,
            seen: last,
            at: recent,
            purpose: 'check',
            reason: 'skipped (catch-up off)',
            holder: this.deps.holder,
          });
        }
      }
    }
  }

  /** Ticks every tickSeconds on the real clock until stop(). */
  startTimer(): void {
    this.timer = setInterval(() => this.runTick(), this.settings.tickSeconds * 1000);
    this.runTick();
  }

  private runTick(): void {
    if (this.stopped || this.ticking) return;
    void this.tick().catch((err: unknown) => this.deps.logger.error({ err }, 'scheduler tick failed; the next tick tries again'));
  }

  /** Stops ticking; a leader hands the scheduling lock over once its tick in progress ends. */
  stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const ticking = this.ticking?.catch(() => undefined);
    return (async () => {
      await ticking;
      await this.deps.leadership?.release();
    })();
  }

  /** The last view of each source. */
  view(source: string): SourceView | undefined {
    return this.views.get(source);
  }

  /** Forgets cached models and costs (after runs that may have changed them). */
  invalidate(source?: string): void {
    if (source) this.slow.delete(source);
    else this.slow.clear();
  }

  /** One pass over every source: decides and dispatches. Returns what it dispatched. */
  tick(): Promise<RunJob[]> {
    this.ticking ??= this.tickOnce().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** Whether this replica decided at its last tick (it holds the scheduling lock, or there is none). */
  leading = false;

  private async tickOnce(): Promise<RunJob[]> {
    const leading = this.deps.leadership ? await this.deps.leadership.lead() : true;
    if (leading !== this.leading) {
      this.leading = leading;
      if (leading) this.deps.logger.info('this replica now decides the runs of every source');
    }
    if (!leading) return [];
    const started = performance.now();
    const now = this.deps.now();
    const [inFlight, health] = await Promise.all([
      this.deps.dispatcher.inFlight(
        this.deps.pool,
        this.streams.map((s) => s.key),
      ),
      loadSourceHealth(this.deps.pool),
    ]);
    const sources = this.config.sources;
    const limit = pLimit(SOURCES_AT_ONCE);
    const bySource = await Promise.all(
      sources.map((listed) =>
        limit(async () => {
          if (this.stopped) return [];
          // A reload during this tick may have changed or removed it.
          const source = this.config.sources === sources ? listed : this.config.sources.find((s) => s.name === listed.name);
          if (!source) return [];
          try {
            return await this.tickSource(source, now, inFlight, health);
          } catch (err) {
            this.deps.logger.error({ err, source: source.name }, 'could not schedule this source at this tick; the next tick tries again');
            return [];
          }
        }),
      ),
    );
    const jobs = bySource.flat();
    this.deps.onTick?.((performance.now() - started) / 1000, jobs.length);
    return jobs;
  }

  private async tickSource(source: SourceConfig, now: Date, inFlight: Set<string>, health: Map<string, SourceHealth>): Promise<RunJob[]> {
    const view = await observeSource(
      {
        pool: this.deps.pool,
        ledgerFor: this.deps.ledgerFor,
        settings: this.settings,
        slow: (name, at, timeZone) => this.slowRead(name, at, timeZone),
        health,
      },
      source,
      this.streams.filter((s) => s.source === source.name),
      now,
      inFlight,
    );
    this.views.set(source.name, view);
    await this.sayHealth(source.name, view.health);
    if (view.pausedUntil) return [];
    const jobs: RunJob[] = [];
    const dispatch = async (s: ScheduledStream, job: Omit<RunJob, 'source' | 'resource' | 'firedAt'>, at: Date, notifiedUntil?: Date) => {
      if (this.stopped) return;
      const claimed = await claimDispatch(this.deps.pool, {
        source: s.source,
        resource: s.resource,
        seen: view.rows.get(s.resource)?.lastFireAt ?? null,
        at,
        purpose: job.purpose,
        reason: job.reason,
        holder: this.deps.holder,
        notifiedUntil,
      });
      if (!claimed) return;
      const full: RunJob = { source: s.source, resource: s.resource, firedAt: at.toISOString(), ...job };
      await this.deps.dispatcher.dispatch(full);
      inFlight.add(runKey(full));
      this.deps.onDispatch?.(full);
      jobs.push(full);
    };
    for (const fire of view.cronFires) {
      if (fire.reason === 'resume')
        this.deps.logger.info({ source: source.name, resource: fire.stream.resource }, 'resuming a run stopped part-way');
      await dispatch(fire.stream, { purpose: fire.purpose, reason: fire.reason }, fire.at);
    }
    for (const sp of view.plan.streams) {
      if (!sp.due) continue;
      const s = view.streams.find((x) => x.resource === sp.resource)!;
      const webhook = sp.due.purpose === 'webhook';
      const job = {
        purpose: sp.due.purpose,
        reason: sp.due.reason,
        ...(sp.due.mustInclude ? { mustInclude: sp.due.mustInclude.toISOString() } : {}),
        ...(webhook ? { notifiedBefore: view.rows.get(s.resource)?.notifiedUntil?.toISOString() ?? null } : {}),
      };
      await dispatch(s, job, now, webhook ? now : undefined);
    }
    await this.sayOnce(source.name, view.plan, view.rows);
    return jobs;
  }

  /** A source's failing is logged when it starts and when it ends, by the one process that records the change. */
  private async sayHealth(source: string, health: SourceHealth | null): Promise<void> {
    if (!health) return;
    const failing = health.failingSince !== null;
    if (health.reportedFailing === failing || !(await markReported(this.deps.pool, source, failing))) return;
    if (!failing) {
      this.deps.logger.info({ source }, 'the source answers again: its streams are scheduled as before');
      return;
    }
    const detail = {
      source,
      failure: health.lastFailureKind,
      code: health.lastErrorCode,
      error: health.lastError,
      failures: health.consecutiveFailures,
      failingSince: health.failingSince?.toISOString(),
      pausedUntil: health.pausedUntil?.toISOString(),
    };
    this.deps.logger.warn(
      detail,
      health.lastFailureKind === 'auth'
        ? 'the source refuses the credentials: nothing is sent to it until its pause ends, and the pause grows while it keeps refusing (fix its credentials)'
        : 'the source is failing: nothing is sent to it until its pause ends, and the pause grows while it keeps failing',
    );
  }

  /** Freshness warnings are logged when they appear or change, by the one process that records the change. */
  private async sayOnce(source: string, plan: SourcePlan, rows: Map<string, StreamScheduleRow>): Promise<void> {
    for (const s of plan.streams) {
      const warning = plan.warnings.find((w) => w.resource === s.resource)?.message ?? null;
      if ((rows.get(s.resource)?.warning ?? null) === warning) continue;
      if (!(await setWarning(this.deps.pool, source, s.resource, warning))) continue;
      if (warning) this.deps.logger.warn({ source, resource: s.resource }, warning);
      else this.deps.logger.info({ source, resource: s.resource }, 'its freshness target is honoured again');
    }
  }

  private async slowRead(source: string, now: Date, timeZone: string): Promise<SlowRead> {
    const cached = this.slow.get(source);
    if (cached && Math.abs(now.getTime() - cached.at) < SLOW_READ_MS && cached.today === localWeekday(now, timeZone)) return cached;
    const read = await readSlow(this.deps.pool, source, now, timeZone);
    this.slow.set(source, read);
    return read;
  }
}
