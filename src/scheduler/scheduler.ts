/**
 * The scheduler of `pmsync serve`: fires each stream's schedule, safely with
 * any number of replicas on one database.
 *
 * - Timers: one node-cron task per source and expression; streams firing
 *   together run in the source's stream order.
 * - One fire, one run: a process claims a fire in pmsync.schedules before
 *   running it (one conditional UPDATE), so replicas never run a slot twice.
 * - No stacking: a tick whose stream is still queued or running here is
 *   skipped; one whose stream runs in another process is skipped by the
 *   stream lock (src/scheduler/lock.ts).
 * - One source's streams run one after another (they share its quota and rate
 *   limit); different sources run side by side.
 * - Catch-up: at start, a schedule whose most recent fire is later than the
 *   last one claimed (it was missed while nothing ran) fires once; a stream
 *   left part-way through a window resumes at once.
 * - An exhausted quota pauses the source's ticks until the quota day resets.
 */
import cron from 'node-cron';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import { parseCron, previousFire } from './crontab.ts';
import { missedFire, timerGroups, type Schedule, type TimerGroup } from './plan.ts';
import { claimFire, interruptedStreams, registerSchedules, unclaimFire } from './store.ts';

export type FireReason = 'scheduled' | 'catch-up' | 'resume';
/** What one tick of one schedule did. */
export type TickOutcome = 'queued' | 'skipped_running' | 'not_elected' | 'paused' | 'stopping';

/** What running one stream came to, as far as scheduling cares. */
export interface StreamRunOutcome {
  /** Another process held the stream's lock, so nothing ran. */
  locked: boolean;
  /** The source's quota is used up until then: hold its ticks. */
  quotaResumeAt?: Date;
}

export interface Timer {
  stop(): void;
}

/** Starts a timer calling onTick(slot) at each fire of the group's expression. */
export type TimerFactory = (group: TimerGroup, onTick: (slot: Date) => void) => Timer;

export interface SchedulerDeps {
  pool: Pool;
  logger: Logger;
  now: () => Date;
  /** Runs one stream of one source (holding its stream lock). */
  runStream(schedule: Schedule, reason: FireReason): Promise<StreamRunOutcome>;
  /** Identifies this process in pmsync.schedules.last_claimed_by. */
  holder: string;
  catchUp: boolean;
  timers?: TimerFactory;
  onTick?: (schedule: Schedule, outcome: TickOutcome | 'locked', reason: FireReason) => void;
}

/** node-cron timers; its own log lines go to pmsync's logger. */
export function cronTimers(logger: Logger): TimerFactory {
  const log = logger.child({ component: 'node-cron' });
  const cronLogger = {
    info: (m: string) => log.debug(m),
    warn: (m: string) => log.warn(m),
    error: (m: string | Error, err?: Error) => log.error({ err: err ?? m }, String(m)),
    debug: (m: string | Error) => log.debug(String(m)),
  };
  return (group, onTick) => {
    const task = cron.createTask(group.cron, (ctx) => onTick(ctx.date), {
      timezone: group.timeZone,
      name: `${group.source} ${group.cron}`,
      logger: cronLogger,
      // A tick delayed by a busy event loop still runs, late, instead of being dropped.
      missedExecutionTolerance: 5 * 60_000,
    });
    void task.start();
    return { stop: () => void task.destroy() };
  };
}

export class Scheduler {
  private readonly deps: SchedulerDeps;
  private readonly schedules: Schedule[];
  private readonly timers: Timer[] = [];
  /** Keys queued or running in this process. */
  private readonly busy = new Set<string>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly pausedUntil = new Map<string, Date>();
  private stopping = false;

  constructor(schedules: Schedule[], deps: SchedulerDeps) {
    this.schedules = schedules;
    this.deps = deps;
  }

  /** Registers the schedules, starts the timers, and fires what was missed or interrupted. */
  async start(): Promise<void> {
    const { pool, now, logger } = this.deps;
    const lastFires = await registerSchedules(pool, this.schedules);
    const interrupted = await interruptedStreams(pool, this.schedules);
    const makeTimer = this.deps.timers ?? cronTimers(logger);
    const groups = timerGroups(this.schedules);
    for (const group of groups) {
      this.timers.push(makeTimer(group, (slot) => void this.tick(group, slot, 'scheduled')));
    }
    const at = now();
    for (const group of groups) {
      for (const s of group.schedules) {
        const mostRecent = previousFire(parseCron(s.cron), s.timeZone, at);
        if (this.deps.catchUp && mostRecent && missedFire(lastFires.get(s.key) ?? null, mostRecent)) {
          logger.info(
            { schedule: s.key, missedFire: mostRecent.toISOString(), lastFire: lastFires.get(s.key)?.toISOString() ?? null },
            'catching up a missed fire',
          );
          await this.fire(s, mostRecent, 'catch-up');
        } else if (interrupted.has(s.key)) {
          logger.info({ schedule: s.key }, 'resuming a run stopped part-way');
          await this.fire(s, null, 'resume');
        }
      }
    }
  }

  /** One timer tick: fire each schedule of the group, in stream order. */
  async tick(group: TimerGroup, slot: Date, reason: FireReason = 'scheduled'): Promise<TickOutcome[]> {
    const outcomes: TickOutcome[] = [];
    for (const s of group.schedules) outcomes.push(await this.fire(s, slot, reason));
    return outcomes;
  }

  /**
   * Fires one schedule: claims the slot (when there is one) and queues the run
   * behind the source's other streams. Resolves once queued, not when run.
   */
  async fire(schedule: Schedule, slot: Date | null, reason: FireReason): Promise<TickOutcome> {
    const outcome = await this.decide(schedule, slot, reason);
    this.deps.onTick?.(schedule, outcome, reason);
    return outcome;
  }

  private async decide(schedule: Schedule, slot: Date | null, reason: FireReason): Promise<TickOutcome> {
    const { logger, pool, now } = this.deps;
    const log = logger.child({ schedule: schedule.key, slot: slot?.toISOString(), reason });
    if (this.stopping) return 'stopping';
    if (this.busy.has(schedule.key)) {
      log.warn('the previous run of this stream is still going; this tick is skipped');
      return 'skipped_running';
    }
    const paused = this.pausedUntil.get(schedule.source);
    if (paused && paused > now()) {
      log.debug({ until: paused.toISOString() }, 'quota used up; tick skipped until the quota day resets');
      return 'paused';
    }
    let previous: Date | null = null;
    if (slot) {
      const claim = await claimFire(pool, schedule.key, slot, this.deps.holder);
      if (!claim) {
        log.debug('another process took this fire');
        return 'not_elected';
      }
      previous = claim.previous;
    }
    this.busy.add(schedule.key);
    this.enqueue(schedule.source, async () => {
      try {
        if (this.stopping) {
          if (slot) await unclaimFire(pool, schedule.key, slot, previous).catch(() => undefined);
          log.info('stopping: queued run not started (its fire is handed back)');
          return;
        }
        const outcome = await this.deps.runStream(schedule, reason);
        if (outcome.locked) this.deps.onTick?.(schedule, 'locked', reason);
        if (outcome.quotaResumeAt) this.pausedUntil.set(schedule.source, outcome.quotaResumeAt);
      } catch (err) {
        log.error({ err }, 'scheduled run failed');
      } finally {
        this.busy.delete(schedule.key);
      }
    });
    return 'queued';
  }

  private enqueue(source: string, job: () => Promise<void>): void {
    const next = (this.chains.get(source) ?? Promise.resolve()).then(job);
    this.chains.set(source, next);
    void next.then(() => {
      if (this.chains.get(source) === next) this.chains.delete(source);
    });
  }

  /** Keys of the streams queued or running in this process. */
  running(): string[] {
    return [...this.busy];
  }

  /** Resolves when nothing is queued or running. */
  async idle(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()]);
  }

  /**
   * Stops the timers and drops queued runs; running ones end at their next
   * page boundary once the caller aborts the sync signal. Resolves true when
   * everything ended within `timeoutMs`.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    for (const t of this.timers.splice(0)) t.stop();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.idle().then(() => true as const), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
