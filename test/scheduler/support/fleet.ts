/**
 * Several practices served by `pmsync serve` on an injected clock: one
 * simulator with a tenant per practice, a source per tenant, real PostgreSQL,
 * run queue and HTTP. Ticks are driven by the test, and every run a tick
 * dispatched is carried out before the clock moves on. Requests are counted
 * from the simulator's own request log, by gateway key.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { openApp, type App } from '../../../src/app.ts';
import { loadConfig } from '../../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../../src/sync/stream-registry.ts';
import type { Config } from '../../../src/config/schema.ts';
import type { RunJob } from '../../../src/scheduler/dispatch.ts';
import { startServe, type RunningServe } from '../../../src/serve/serve.ts';
import {
  startSimulator,
  type CoreResource,
  type CoreTenantOptions,
  type Simulator,
  type SimulatorOptions,
} from '../../../simulator/index.ts';
import { RigClock } from '../../../bench/support/day-rig.ts';

export interface Practice {
  name: string;
  tenant: CoreTenantOptions;
  /** The password pmsync is configured with (the tenant's own when omitted). */
  password?: string;
  /** Extra settings of the source entry. */
  source?: Record<string, unknown>;
}

export interface FleetOptions {
  databaseUrl: string;
  /** Where the clock starts. */
  start: number;
  practices: Practice[];
  sizes?: Partial<Record<CoreResource, number>>;
  /** The simulator's waits (slowMs, hangMs); real timers when omitted. */
  delay?: SimulatorOptions['delay'];
  schedules?: Record<string, unknown>;
}

interface Serving {
  app: App;
  serve: RunningServe;
}

export class Fleet {
  readonly clock: RigClock;
  readonly sim: Simulator;
  readonly logs: string[] = [];
  config: Config;
  private readonly options: FleetOptions;
  private main: Serving | null = null;
  private readonly others: Serving[] = [];

  private constructor(options: FleetOptions, clock: RigClock, sim: Simulator, config: Config) {
    this.options = options;
    this.clock = clock;
    this.sim = sim;
    this.config = config;
  }

  static async start(options: FleetOptions): Promise<Fleet> {
    const clock = new RigClock(options.start);
    const sim = await startSimulator({
      now: clock.now,
      seed: 11,
      delay: options.delay,
      tenants: options.practices.map((p) => ({ ...p.tenant, sizes: options.sizes })),
      practices: [],
    });
    const fleet = new Fleet(options, clock, sim, fleetConfig(sim, options, options.practices));
    fleet.main = await fleet.open(fleet.config, true);
    return fleet;
  }

  get app(): App {
    return this.main!.app;
  }

  get serve(): RunningServe {
    return this.main!.serve;
  }

  /** The config of these practices (a changed list: a corrected password, say). */
  configFor(practices: Practice[]): Config {
    return fleetConfig(this.sim, this.options, practices);
  }

  private async open(config: Config, logged: boolean): Promise<Serving> {
    const logs = this.logs;
    const destination = new Writable({
      write(chunk, _enc, done) {
        if (logged) logs.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const app = await openApp(config, { now: this.clock.now, logDestination: destination });
    const serve = await startServe(app, config, { manualTicks: true });
    return { app, serve };
  }

  /** Replaces the serve process with one running `config` (a restart after a config change). */
  async restart(config: Config): Promise<void> {
    await this.stopServing(this.main!);
    this.config = config;
    this.main = await this.open(config, true);
  }

  /** Another serve replica on the same database, simulator and clock. */
  async replica(): Promise<RunningServe> {
    const serving = await this.open(this.config, false);
    this.others.push(serving);
    return serving.serve;
  }

  /** One scheduler tick at the current clock, and every run it led to carried out. */
  async tick(): Promise<RunJob[]> {
    const jobs = await this.serve.scheduler.tick();
    await this.serve.dispatcher.drained(this.app.pool, 2);
    return jobs;
  }

  /** Ticks from `from` to `to` every tickSeconds; returns what was dispatched. */
  async play(from: number, to: number): Promise<RunJob[]> {
    const step = (this.config.schedules.tickSeconds ?? 60) * 1000;
    const jobs: RunJob[] = [];
    for (let t = from; t < to; t += step) {
      this.clock.set(t);
      jobs.push(...(await this.tick()));
    }
    return jobs;
  }

  /** The instants (epoch ms) of the requests the simulator received with this key in [from, to). */
  requests(apikey: string, from = -Infinity, to = Infinity): number[] {
    return this.sim
      .stats()
      .requests.filter((r) => r.apikey === apikey && r.at.getTime() >= from && r.at.getTime() < to)
      .map((r) => r.at.getTime());
  }

  /** Log lines (parsed) with this message. */
  logged(msg: string): Array<Record<string, unknown>> {
    return this.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);
  }

  private async stopServing(s: Serving): Promise<void> {
    await s.serve.stop();
    await s.app.close();
  }

  async close(): Promise<void> {
    for (const s of this.others.splice(0)) await this.stopServing(s);
    if (this.main) await this.stopServing(this.main);
    this.main = null;
    await this.sim.close();
  }
}

function fleetConfig(sim: Simulator, options: FleetOptions, practices: Practice[]): Config {
  const file = join(mkdtempSync(join(tmpdir(), 'pmsync-fleet-')), 'pmsync.json');
  writeFileSync(
    file,
    JSON.stringify({
      sources: practices.map((p) => ({
        name: p.name,
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: p.tenant.apikey,
        username: p.tenant.username,
        password: p.password ?? p.tenant.password,
        lagSeconds: 60,
        // The client's own retries, without waiting on the real clock.
        retry: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0, maxElapsedMs: 60_000 },
        ...p.source,
      })),
      schedules: { tickSeconds: 60, ...options.schedules },
      serve: { port: 0, host: '127.0.0.1' },
    }),
  );
  return loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: options.databaseUrl, LOG_LEVEL: 'info' } });
}
