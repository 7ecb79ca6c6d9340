/**
 * A practice day on an injected clock: the simulator, an embedded or given
 * PostgreSQL, and `pmsync serve` in this process (its scheduler, run queue,
 * worker and webhook receiver, all real, over real HTTP and a real database),
 * with one clock both read. The day is played tick by tick, so a whole day
 * takes seconds. Used by the scheduling benchmark and the scheduler's
 * integration tests.
 *
 * Staleness of a change: from its instant at the source to the tick whose runs
 * made its row visible (the row's ModifiedOn reached the change's).
 *
 * Play a date in the future of the real clock: pg-boss puts work off until a
 * real instant (a record refresh waiting for the quota reset), which must not
 * already have passed.
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { openApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type Config, type CoreSourceConfig } from '../../src/config/schema.ts';
import type { Purpose } from '../../src/api/http.ts';
import type { RunJob } from '../../src/scheduler/dispatch.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { mountWebhooks } from '../../src/serve/webhooks.ts';
import { EVENT_NAMES } from '../../src/webhooks/events.ts';
import { RegistrationApi, registrationUrl } from '../../src/webhooks/registration.ts';
import { hashToken, newToken } from '../../src/webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret } from '../../src/state/webhook-secrets.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { refreshQueueCounts } from '../../src/webhooks/queue.ts';
import { applyChange, planDay, type DayChange, type DayPattern } from '../../simulator/day.ts';
import { startSimulator, type CoreResource, type Simulator, type TenantHandle } from '../../simulator/index.ts';
import { TenantClock } from '../../simulator/time.ts';

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

const CREDS = { apikey: 'rig-apikey', username: 'rig.user', password: 'rig-password' };
export const RIG_SOURCE = 'clinic';

/** A movable clock both the simulator and pmsync read. */
export class RigClock {
  ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
  now = (): Date => new Date(this.ms);
  set(ms: number): void {
    this.ms = ms;
  }
}

export interface RigOptions {
  databaseUrl: string;
  /** The measured day: local midnight of this date in `timeZone` starts its quota day. */
  date: string;
  timeZone: string;
  /** The source's budget (requests a day, or "15%"). */
  budget?: number | string;
  /** Extra `schedules` settings (e.g. pinned crons for the fixed-schedule baseline). */
  schedules?: Record<string, unknown>;
  /** Register the receiver at the simulator for every event. */
  webhooks: boolean;
  /** webhooks.refresh: auto (notifications trigger checks) or record (each fetches its record). */
  webhookRefresh?: 'auto' | 'record';
  sizes?: Partial<Record<CoreResource, number>>;
  /** Days of history played before the first pass, so the model can learn from it (Sundays closed). */
  historyDays?: number;
  historyPattern?: DayPattern;
  /** The history day by day instead, oldest first, ending the day before the measured one (null: closed). */
  history?: ReadonlyArray<DayPattern | null>;
  tickSeconds?: number;
  lagSeconds?: number;
  seed?: number;
  /** Extra settings of the source entry. */
  source?: Record<string, unknown>;
  /** The scheduler plans every source at every tick, not only when its plan can change. */
  planEveryTick?: boolean;
}

export interface TrackedChange {
  resource: CoreResource;
  id: string;
  at: number;
  /** ModifiedOn as served (wall-clock in the tenant's zone). */
  modified: string;
  visibleAt: number | null;
}

export interface DayReport {
  /** Requests the simulator counted for the source's key on the measured day. */
  requests: number;
  /** The same, by stream (list path, or the record endpoint of a resource). */
  requestsByStream: Record<string, number>;
  /** The instant of each of them, in time order. */
  requestTimes: number[];
  /** pmsync's own ledger for the day, by purpose (cross-checked against the simulator's total). */
  ledger: { used: number; byPurpose: Record<Purpose, number>; budget: number };
  changes: TrackedChange[];
  dispatches: RunJob[];
}

export class DayRig {
  readonly options: RigOptions;
  readonly clock: RigClock;
  readonly sim: Simulator;
  readonly tenant: TenantHandle;
  readonly config: Config;
  readonly app: App;
  readonly serve: RunningServe;
  readonly dayStart: number;
  /** Local midnight after the measured day: 23 or 25 hours after dayStart on a daylight-saving change. */
  readonly dayEnd: number;
  readonly logs: string[];
  /**
   * Runs a tick adds after the scheduler's own (an outside trigger, such as a
   * baseline's webhook-triggered checks), dispatched to the same run queue.
   */
  extraRuns?: (now: Date, scheduled: RunJob[]) => Promise<RunJob[]>;
  private readonly tz: TenantClock;

  private constructor(o: RigOptions, clock: RigClock, sim: Simulator, config: Config, app: App, serve: RunningServe, logs: string[]) {
    this.options = o;
    this.clock = clock;
    this.sim = sim;
    this.tenant = sim.tenant(CREDS.apikey);
    this.config = config;
    this.app = app;
    this.serve = serve;
    this.logs = logs;
    this.tz = new TenantClock(o.timeZone);
    this.dayStart = localMidnight(o.date, o.timeZone);
    this.dayEnd = localMidnight(this.tz.date(this.dayStart + DAY + 2 * HOUR), o.timeZone);
  }

  static async start(o: RigOptions): Promise<DayRig> {
    const dayStart = localMidnight(o.date, o.timeZone);
    const historyDays = o.history?.length ?? o.historyDays ?? 0;
    // The simulator's seeded data ends where the played history begins.
    const clock = new RigClock(dayStart - (historyDays + 1) * DAY);
    const offsetHours = -Math.round(new TenantClock(o.timeZone).offset(dayStart) / HOUR);
    const sim = await startSimulator({
      now: clock.now,
      seed: o.seed ?? 7,
      tenants: [{ ...CREDS, variant: 'core', timeZone: o.timeZone, sizes: o.sizes, quotaResetHourUtc: ((offsetHours % 24) + 24) % 24 }],
      practices: [],
      webhookTiming: { attemptTimeoutMs: 15_000, retryIntervalMs: 30_000, maxAttempts: 10 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-rig-'));
    const file = join(dir, 'pmsync.json');
    writeFileSync(
      file,
      JSON.stringify({
        sources: [
          {
            name: RIG_SOURCE,
            kind: 'core',
            baseUrl: sim.coreBaseUrl(),
            ...CREDS,
            timeZone: o.timeZone,
            quota: { timeZone: o.timeZone, resetHour: 0 },
            lagSeconds: o.lagSeconds ?? 60,
            ...(o.budget !== undefined ? { budget: o.budget } : {}),
            ...o.source,
          },
        ],
        schedules: { tickSeconds: o.tickSeconds ?? 30, ...o.schedules },
        serve: { port: 0, host: '127.0.0.1' },
        webhooks: { refresh: o.webhookRefresh ?? 'auto' },
      }),
    );
    const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: o.databaseUrl, LOG_LEVEL: 'info' } });
    const logs: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        logs.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const app = await openApp(config, { now: clock.now, logDestination: destination });
    const serve = await startServe(app, config, {
      manualTicks: true,
      planEveryTick: o.planEveryTick,
      webhooks: o.webhooks ? mountWebhooks : undefined,
    });
    return new DayRig(o, clock, sim, config, app, serve, logs);
  }

  /**
   * Plays the history days (no pmsync involved), registers the webhooks, and
   * runs every stream's first pass late on the day before the measured one.
   */
  async prepare(): Promise<void> {
    const o = this.options;
    const days = o.history?.length ?? o.historyDays ?? 0;
    for (let d = days; d >= 1; d--) {
      const date = new Date(this.dayStart - d * DAY + 12 * HOUR);
      const pattern = o.history ? o.history[days - d] : date.getUTCDay() === 0 ? null : o.historyPattern; // closed on Sundays
      if (!pattern) continue;
      for (const change of planDay(pattern, localDate(date.getTime(), o.timeZone), o.timeZone, (o.seed ?? 7) * 1000 + d)) {
        this.clock.set(change.at);
        applyChange(this.tenant, change);
      }
    }
    this.clock.set(this.dayStart - 2 * HOUR);
    if (o.webhooks) await this.registerWebhooks();
    // The first passes get the whole allowance of the day before, whatever the
    // scenario's budget, so every scenario starts its day caught up.
    const ledger = this.app.ledgerFor(this.config.sources[0]!);
    const budget = ledger.settings.budget;
    (ledger.settings as { budget: number }).budget = 0;
    try {
      for (let i = 0; i < 50; i++) {
        const jobs = await this.tick();
        if (jobs.length === 0) break;
      }
    } finally {
      (ledger.settings as { budget: number }).budget = budget;
    }
    this.clock.set(this.dayStart);
  }

  private async registerWebhooks(): Promise<void> {
    const source = this.config.sources[0] as CoreSourceConfig;
    const token = newToken();
    const now = this.clock.now();
    await addProvisionalSecret(this.app.pool, RIG_SOURCE, hashToken(token), now);
    await activateSecret(this.app.pool, RIG_SOURCE, hashToken(token), now, now);
    const api = new RegistrationApi(this.app.ctx.clientFor(source));
    for (const event of EVENT_NAMES) await api.create(event, registrationUrl(this.serve.url, RIG_SOURCE, token));
  }

  /** One scheduler tick at the current clock, and every run and record refresh it led to carried out. */
  async tick(): Promise<RunJob[]> {
    const jobs = await this.serve.scheduler.tick();
    await this.serve.dispatcher.drained(this.app.pool, 2);
    if (this.options.webhooks) await this.refreshesDone();
    if (!this.extraRuns) return jobs;
    const extra = await this.extraRuns(this.clock.now(), jobs);
    if (extra.length > 0) await this.serve.dispatcher.drained(this.app.pool, 2);
    return [...jobs, ...extra];
  }

  /** Waits until no record refresh is ready, running or retrying (those put off until a quota reset wait). */
  private async refreshesDone(): Promise<void> {
    for (;;) {
      const c = await refreshQueueCounts(this.app.pool);
      if (c.ready + c.active + c.retrying === 0) return;
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /**
   * Plays `changes` from `from` to `to`, ticking every tickSeconds (the rig's,
   * unless given: days played only to be learned from may tick less often); each
   * change is applied at its instant and its webhook deliveries received
   * before the clock moves on.
   */
  async play(
    changes: DayChange[],
    from: number,
    to: number,
    onTick?: (t: number, jobs: RunJob[]) => void | Promise<void>,
    tickSeconds: number = this.options.tickSeconds ?? 30,
  ): Promise<{ changes: TrackedChange[]; dispatches: RunJob[] }> {
    const step = tickSeconds * 1000;
    const tracked: TrackedChange[] = [];
    const dispatches: RunJob[] = [];
    let next = 0;
    const pending = new Map<CoreResource, TrackedChange[]>();
    for (let t = from; t < to; t += step) {
      while (next < changes.length && changes[next]!.at <= t) {
        const change = changes[next++]!;
        this.clock.set(change.at);
        const record = applyChange(this.tenant, change);
        const def = REST_STREAMS.find((s) => s.resource === change.resource)!;
        const c: TrackedChange = {
          resource: change.resource,
          id: String(record[def.idField]),
          at: change.at,
          modified: String(record.ModifiedOn),
          visibleAt: null,
        };
        tracked.push(c);
        pending.set(change.resource, [...(pending.get(change.resource) ?? []), c]);
        await this.sim.webhooksSettled();
      }
      this.clock.set(t);
      const jobs = await this.tick();
      dispatches.push(...jobs);
      await this.markVisible(pending, t);
      await onTick?.(t, jobs);
    }
    return { changes: tracked, dispatches };
  }

  private async markVisible(pending: Map<CoreResource, TrackedChange[]>, t: number): Promise<void> {
    for (const [resource, list] of pending) {
      if (list.length === 0) continue;
      const table = REST_STREAMS.find((s) => s.resource === resource)!.table.name;
      const res = await this.app.pool.query<{ id: string; m: string }>(
        `SELECT id, to_char(source_modified_at, 'YYYY-MM-DD"T"HH24:MI:SS') AS m FROM "${table}" WHERE source = $1 AND id = ANY($2::text[])`,
        [RIG_SOURCE, [...new Set(list.map((c) => c.id))]],
      );
      const seen = new Map(res.rows.map((r) => [r.id, r.m]));
      pending.set(
        resource,
        list.filter((c) => {
          const m = seen.get(c.id);
          if (m !== undefined && m >= c.modified) {
            c.visibleAt = t;
            return false;
          }
          return true;
        }),
      );
    }
  }

  /** Plays one whole quota day of `day` (a pattern, or changes already planned) and reports it. */
  async playDay(day: DayPattern | DayChange[], onTick?: (t: number, jobs: RunJob[]) => void | Promise<void>): Promise<DayReport> {
    const changes = Array.isArray(day) ? day : planDay(day, this.options.date, this.options.timeZone, this.options.seed ?? 7);
    const played = await this.play(changes, this.dayStart, this.dayEnd, onTick);
    return { ...this.requestsOn(this.dayStart, this.dayEnd), ledger: await this.ledger(), ...played };
  }

  /** The simulator's own count of the source key's requests in [from, to), in total and by stream. */
  requestsOn(from: number, to: number): { requests: number; requestsByStream: Record<string, number>; requestTimes: number[] } {
    const byStream: Record<string, number> = {};
    const times: number[] = [];
    let total = 0;
    for (const r of this.sim.stats().requests) {
      if (r.apikey !== CREDS.apikey || r.at.getTime() < from || r.at.getTime() >= to) continue;
      total++;
      times.push(r.at.getTime());
      const parts = r.path.split('/').filter(Boolean).slice(2);
      const key = parts.length > 1 ? `${parts[0]} (record)` : (parts[0] ?? '?');
      byStream[key] = (byStream[key] ?? 0) + 1;
    }
    return { requests: total, requestsByStream: byStream, requestTimes: times.sort((a, b) => a - b) };
  }

  private async ledger(): Promise<DayReport['ledger']> {
    this.clock.set(this.dayStart + 12 * HOUR);
    const snap = await this.app.ledgerFor(this.config.sources[0]!).snapshot();
    return { used: snap.used, byPurpose: snap.byPurpose, budget: snap.budget };
  }

  /** Another serve process's worth of pmsync on the same database, simulator and clock (a replica, or a restart). */
  async replica(): Promise<{ app: App; serve: RunningServe; tick(): Promise<RunJob[]>; stop(): Promise<void> }> {
    const app = await openApp(this.config, { now: this.clock.now, logDestination: new Writable({ write: (_c, _e, done) => done() }) });
    const serve = await startServe(app, this.config, { manualTicks: true, webhooks: this.options.webhooks ? mountWebhooks : undefined });
    const replicas = this.replicas;
    const entry = {
      app,
      serve,
      tick: async () => {
        const jobs = await serve.scheduler.tick();
        await serve.dispatcher.drained(app.pool, 2);
        return jobs;
      },
      stop: async () => {
        replicas.delete(entry);
        await serve.stop();
        await app.close();
      },
    };
    replicas.add(entry);
    return entry;
  }

  private readonly replicas = new Set<{ stop(): Promise<void> }>();

  async close(): Promise<void> {
    for (const r of [...this.replicas]) await r.stop();
    await this.serve.stop();
    await this.app.close();
    await this.sim.close();
  }

  /** Local date (YYYY-MM-DD) of an instant in the rig's zone. */
  localDate(ms: number): string {
    return this.tz.date(ms);
  }
}

export function localMidnight(date: string, timeZone: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new TenantClock(timeZone).fromLocal(Date.UTC(y, m - 1, d));
}

function localDate(ms: number, timeZone: string): string {
  return new TenantClock(timeZone).date(ms);
}

/** Staleness in minutes of each change made visible, optionally only those in [fromHour, toHour) local time. */
export function stalenessMinutes(changes: TrackedChange[], filter: (c: TrackedChange) => boolean = () => true): number[] {
  return changes.filter((c) => c.visibleAt !== null && filter(c)).map((c) => (c.visibleAt! - c.at) / MINUTE);
}
