/**
 * A fleet on an injected clock: the simulator serving many practices (each its
 * own gateway key, quota and reference-day changes), one PostgreSQL, and
 * several `pmsync serve` replicas as real processes. The replicas' clock and
 * scheduler ticks come over IPC (src/serve/test-control.ts), so a simulated
 * day plays in minutes while every run, claim, lock and queue job is real.
 * Used by the fleet benchmark (bench/fleet.ts) and the fleet tests
 * (test/fleet/).
 *
 * Requests are the simulator's own counts per gateway key and quota day.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { openJobQueue, type JobQueue } from '../../src/queue.ts';
import { anyRunInFlight } from '../../src/scheduler/dispatch.ts';
import type { ProbeReply, TickReply } from '../../src/serve/test-control.ts';
import { REST_STREAMS } from '../../src/sync/streams/index.ts';
import { applyChange, planDay, type DayChange, type DayPattern } from '../../simulator/day.ts';
import { startSimulator, type CoreResource, type Simulator, type TenantHandle } from '../../simulator/index.ts';
import { TenantClock } from '../../simulator/time.ts';
import { DAY, HOUR, localMidnight, RigClock } from './day-rig.ts';
import { ROOT, STARTS, readMemory, startEnv, type StartName } from './proc.ts';

export interface FleetOptions {
  databaseUrl: string;
  practices: number;
  replicas: number;
  /** The measured day: local midnight of this date starts its quota day. */
  date: string;
  timeZone: string;
  sizes: Partial<Record<CoreResource, number>>;
  /** Days of history played before the first pass, so each practice's change model has something to learn. */
  historyDays: number;
  historyPattern: DayPattern;
  /** Extra settings of every source entry. */
  source?: Record<string, unknown>;
  /** Extra settings of some sources, by index. */
  sourceFor?: (i: number) => Record<string, unknown>;
  /** Runs each replica works at once. */
  concurrency?: number;
  /** Extra `schedules` settings. */
  schedules?: Record<string, unknown>;
  runHeartbeatSeconds?: number;
  seed?: number;
  /**
   * The fleet-wide index of the first practice served (0 by default): practice
   * i of this rig is practice `firstPractice + i` of the fleet, with that
   * practice's gateway key, source name, records and changes. So one practice
   * of a fleet can be played alone and compared with itself in the fleet.
   */
  firstPractice?: number;
  /** Sent to the replicas' log (stderr is collected); warn by default. */
  logLevel?: string;
  /** How the pmsync processes are started (bench/support/proc.ts); the bin as shipped by default. */
  start?: StartName;
}

export interface Replica {
  index: number;
  child: ChildProcess;
  pid: number;
  stderr: string[];
  /** Its HTTP endpoints (/metrics, the status page). */
  url: string;
  /** Peak RSS (VmHWM) seen for the process, bytes. */
  peakRss: number;
  alive: boolean;
}

export interface TrackedChange {
  source: string;
  resource: CoreResource;
  id: string;
  at: number;
  modified: string;
  visibleAt: number | null;
}

const CREDS = { username: 'fleet.user', password: 'fleet-password' };

export function sourceName(i: number): string {
  return `p${String(i).padStart(3, '0')}`;
}
export function apikeyOf(i: number): string {
  return `fleet-key-${String(i).padStart(3, '0')}`;
}

export class FleetRig {
  readonly o: FleetOptions;
  readonly clock: RigClock;
  readonly sim: Simulator;
  readonly tenants: TenantHandle[];
  readonly configFile: string;
  readonly dayStart: number;
  readonly pool: Pool;
  replicas: Replica[] = [];
  /** Scheduler CPU and wall time per tick of the replica that decided it. */
  readonly ticks: Array<{ at: number; replica: number; cpuMicros: number; wallMs: number; dispatched: number }> = [];
  private nextId = 1;
  /** Reads the run queue for drained(), opened once the replicas have installed it. */
  private queue: JobQueue | undefined;
  private readonly waiting = new Map<number, (reply: TickReply | ProbeReply) => void>();

  private constructor(o: FleetOptions, clock: RigClock, sim: Simulator, configFile: string, pool: Pool) {
    this.o = o;
    this.clock = clock;
    this.sim = sim;
    this.tenants = Array.from({ length: o.practices }, (_, i) => sim.tenant(apikeyOf(this.practice(i))));
    this.configFile = configFile;
    this.dayStart = localMidnight(o.date, o.timeZone);
    this.pool = pool;
  }

  /** The fleet-wide index of this rig's practice i. */
  practice(i: number): number {
    return (this.o.firstPractice ?? 0) + i;
  }

  static async start(o: FleetOptions): Promise<FleetRig> {
    const at = (i: number) => (o.firstPractice ?? 0) + i;
    const dayStart = localMidnight(o.date, o.timeZone);
    const clock = new RigClock(dayStart - (o.historyDays + 1) * DAY);
    const offsetHours = -Math.round(new TenantClock(o.timeZone).offset(dayStart) / HOUR);
    const sim = await startSimulator({
      now: clock.now,
      seed: o.seed ?? 11,
      requestLogLimit: 1,
      tenants: Array.from({ length: o.practices }, (_, i) => ({
        apikey: apikeyOf(at(i)),
        ...CREDS,
        variant: 'core' as const,
        timeZone: o.timeZone,
        sizes: o.sizes,
        quotaResetHourUtc: ((offsetHours % 24) + 24) % 24,
      })),
      practices: [],
    });
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-fleet-'));
    const configFile = join(dir, 'pmsync.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        databaseUrl: o.databaseUrl,
        sources: Array.from({ length: o.practices }, (_, i) => ({
          name: sourceName(at(i)),
          kind: 'core',
          baseUrl: sim.coreBaseUrl(),
          apikey: apikeyOf(at(i)),
          ...CREDS,
          timeZone: o.timeZone,
          quota: { timeZone: o.timeZone, resetHour: 0 },
          ...o.source,
          ...o.sourceFor?.(at(i)),
        })),
        schedules: { concurrency: o.concurrency ?? 4, ...o.schedules },
        serve: { port: 0, host: '127.0.0.1', runHeartbeatSeconds: o.runHeartbeatSeconds ?? 30, shutdownTimeoutSeconds: 10 },
      }),
    );
    const pool = createPool(o.databaseUrl, 4);
    return new FleetRig(o, clock, sim, configFile, pool);
  }

  /** Starts the replicas (migrating the database first, once). */
  async startReplicas(): Promise<void> {
    await this.cli(['migrate']);
    for (let i = 0; i < this.o.replicas; i++) this.replicas.push(await this.spawnReplica(i));
  }

  /** Runs a pmsync command to completion at the current clock; resolves with its exit code and output. */
  async cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [...STARTS[this.o.start ?? 'bin'].args, '--config', this.configFile, ...args], {
      cwd: ROOT,
      env: this.env({ PMSYNC_TEST_NOW: this.clock.now().toISOString() }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    return { code, stdout, stderr };
  }

  private env(extra: Record<string, string>): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'test',
      LOG_LEVEL: this.o.logLevel ?? 'warn',
      NO_COLOR: '1',
      // E.g. --cpu-prof, to see where a replica spends its time.
      ...(process.env.FLEET_NODE_OPTIONS ? { NODE_OPTIONS: process.env.FLEET_NODE_OPTIONS } : {}),
      ...startEnv(this.o.start ?? 'bin'),
      ...extra,
    };
  }

  private async spawnReplica(index: number): Promise<Replica> {
    const child = spawn(process.execPath, [...STARTS[this.o.start ?? 'bin'].args, '--config', this.configFile, 'serve', '--no-webhooks'], {
      cwd: ROOT,
      env: this.env({ PMSYNC_TEST_CLOCK: 'ipc', PMSYNC_TEST_NOW: this.clock.now().toISOString() }),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const replica: Replica = { index, child, pid: child.pid!, url: '', stderr: [], peakRss: 0, alive: true };
    child.stderr!.on('data', (d) => {
      replica.stderr.push(...String(d).split('\n').filter(Boolean));
      if (replica.stderr.length > 2000) replica.stderr.splice(0, replica.stderr.length - 2000);
    });
    const ready = new Promise<void>((resolve, reject) => {
      child.on('message', (m: { type: string; id?: number; url?: string }) => {
        if (m.type === 'ready') {
          replica.url = m.url ?? '';
          resolve();
        } else if (m.id !== undefined) {
          this.waiting.get(m.id)?.(m as TickReply | ProbeReply);
          this.waiting.delete(m.id);
        }
      });
      child.once('exit', (code, signal) => {
        replica.alive = false;
        reject(new Error(`replica ${index} exited (${code ?? signal}) before it was ready:\n${replica.stderr.slice(-20).join('\n')}`));
      });
    });
    await ready;
    child.on('exit', () => (replica.alive = false));
    return replica;
  }

  private ask<T extends TickReply | ProbeReply>(r: Replica, type: 'tick' | 'probe'): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (!r.alive) return reject(new Error(`replica ${r.index} has exited`));
      const gone = () => reject(new Error(`replica ${r.index} exited before it answered`));
      r.child.once('exit', gone);
      this.waiting.set(id, (reply) => {
        r.child.off('exit', gone);
        resolve(reply as T);
      });
      r.child.send({ type, id });
    });
  }

  /** Moves the simulator's and every live replica's clock. */
  setClock(ms: number): void {
    this.clock.set(ms);
    for (const r of this.live()) r.child.send({ type: 'clock', ms });
  }

  live(): Replica[] {
    return this.replicas.filter((r) => r.alive);
  }

  /** One tick of every live replica's scheduler at the current clock (each decides its shards' sources); resolves once dispatched. */
  async tickAll(): Promise<number> {
    const replies = await Promise.all(this.live().map((r) => this.ask<TickReply>(r, 'tick').then((reply) => ({ r, reply }))));
    let dispatched = 0;
    for (const { r, reply } of replies) {
      if (reply.error) throw new Error(`replica ${r.index}: tick failed: ${reply.error}`);
      if (reply.deciding)
        this.ticks.push({
          at: this.clock.ms,
          replica: r.index,
          cpuMicros: reply.cpuMicros,
          wallMs: reply.wallMs,
          dispatched: reply.dispatched,
        });
      dispatched += reply.dispatched;
    }
    this.sampleMemory();
    return dispatched;
  }

  /** Waits until no run is waiting, retrying or running in any replica. */
  async drained(pollMs = 20): Promise<void> {
    this.queue ??= await openJobQueue(
      { databaseUrl: this.o.databaseUrl, pool: this.pool, logger: pino({ level: 'silent' }) },
      { mode: 'read' },
    );
    // The database first, then each replica's workers: a job taken in between is seen by its replica.
    while ((await anyRunInFlight(this.pool)) || (await Promise.all(this.live().map((r) => this.probe(r)))).some((p) => p.busy)) {
      this.sampleMemory();
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** A tick and every run it led to. */
  async tick(): Promise<number> {
    const n = await this.tickAll();
    await this.drained();
    return n;
  }

  /** The runs going in a replica right now. */
  async probe(r: Replica): Promise<ProbeReply> {
    return this.ask<ProbeReply>(r, 'probe');
  }

  sampleMemory(): void {
    for (const r of this.live()) {
      const m = readMemory(r.pid);
      if (!m) continue;
      if (m.hwm > r.peakRss) this.memoryTrace.push({ at: this.clock.ms, replica: r.index, rss: m.rss, hwm: m.hwm });
      r.peakRss = Math.max(r.peakRss, m.hwm);
    }
  }

  /** Each rise of a replica's peak RSS: when (simulated time) and to what (bytes); bench/fleet.ts reports them. */
  readonly memoryTrace: Array<{ at: number; replica: number; rss: number; hwm: number }> = [];

  /** SIGKILL: no shutdown, no goodbye to the database. */
  kill(r: Replica): Promise<void> {
    const gone = new Promise<void>((resolve) => (r.alive ? r.child.once('exit', () => resolve()) : resolve()));
    r.child.kill('SIGKILL');
    return gone;
  }

  /** Plays the history days at the simulator only (no pmsync involved). */
  playHistory(): void {
    for (let d = this.o.historyDays; d >= 1; d--) {
      const date = new Date(this.dayStart - d * DAY + 12 * HOUR);
      if (date.getUTCDay() === 0) continue; // closed on Sundays
      const local = new TenantClock(this.o.timeZone).date(date.getTime());
      this.tenants.forEach((tenant, i) => {
        for (const change of planDay(
          this.o.historyPattern,
          local,
          this.o.timeZone,
          (this.o.seed ?? 11) * 100_000 + d * 1000 + this.practice(i),
        )) {
          this.clock.set(change.at);
          applyChange(tenant, change);
        }
      });
    }
  }

  /** Every practice's changes of the measured day, in time order. */
  planDay(pattern: DayPattern): Array<DayChange & { tenant: number }> {
    const all = this.tenants.flatMap((_, i) =>
      planDay(pattern, this.o.date, this.o.timeZone, (this.o.seed ?? 11) * 7919 + this.practice(i)).map((c) => ({ ...c, tenant: i })),
    );
    return all.sort((a, b) => a.at - b.at);
  }

  /** Applies one change at the simulator, at its instant, and tracks it. */
  apply(change: DayChange & { tenant: number }): TrackedChange {
    this.clock.set(change.at);
    const record = applyChange(this.tenants[change.tenant]!, change);
    const def = REST_STREAMS.find((s) => s.resource === change.resource)!;
    return {
      source: sourceName(this.practice(change.tenant)),
      resource: change.resource,
      id: String(record[def.idField]),
      at: change.at,
      modified: String(record.ModifiedOn),
      visibleAt: null,
    };
  }

  /** Marks the tracked changes whose row now holds their version (or a later one) as visible at `t`; returns those still pending. */
  async markVisible(pending: TrackedChange[], t: number): Promise<TrackedChange[]> {
    const left: TrackedChange[] = [];
    const byResource = new Map<CoreResource, TrackedChange[]>();
    for (const c of pending) {
      const list = byResource.get(c.resource);
      if (list) list.push(c);
      else byResource.set(c.resource, [c]);
    }
    for (const [resource, list] of byResource) {
      const table = REST_STREAMS.find((s) => s.resource === resource)!.table.name;
      const res = await this.pool.query<{ source: string; id: string; m: string }>(
        `SELECT source, id, to_char(source_modified_at, 'YYYY-MM-DD"T"HH24:MI:SS') AS m FROM "${table}"
         WHERE (source, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [list.map((c) => c.source), list.map((c) => c.id)],
      );
      const seen = new Map(res.rows.map((r) => [`${r.source}/${r.id}`, r.m]));
      for (const c of list) {
        const m = seen.get(`${c.source}/${c.id}`);
        if (m !== undefined && m >= c.modified) c.visibleAt = t;
        else left.push(c);
      }
    }
    return left;
  }

  /** Every practice's requests on the quota day starting at `dayStart` (one stats read). */
  allRequests(dayStart = this.dayStart): Array<{ used: number; rejected: number }> {
    const stats = this.sim.stats().byApikey;
    const key = new Date(dayStart).toISOString().slice(0, 10); // the simulator names a quota day by the UTC date it starts on
    return this.tenants.map((_, i) => {
      const usage = stats[apikeyOf(this.practice(i))]!;
      return { used: usage.byQuotaDay[key] ?? 0, rejected: usage.rejected };
    });
  }

  /**
   * Records at the simulator that PostgreSQL lacks or holds an older version
   * of (lost), and rows held twice for one record (duplicated), over every
   * practice and Core list resource.
   */
  async compare(): Promise<{ records: number; lost: number; duplicated: number; examples: string[] }> {
    let records = 0;
    let lost = 0;
    let duplicated = 0;
    const examples: string[] = [];
    for (const def of REST_STREAMS) {
      const resource = def.resource as CoreResource;
      if (!this.tenants[0]!.resources.includes(resource)) continue;
      const res = await this.pool.query<{ source: string; id: string; m: string; n: number }>(
        `SELECT source, id, max(to_char(source_modified_at, 'YYYY-MM-DD"T"HH24:MI:SS')) AS m, count(*)::int AS n
         FROM "${def.table.name}" WHERE source LIKE 'p%' GROUP BY source, id`,
      );
      const held = new Map(res.rows.map((r) => [`${r.source}/${r.id}`, r]));
      for (const r of res.rows) if (r.n > 1) duplicated += r.n - 1;
      this.tenants.forEach((tenant, i) => {
        for (const record of tenant.list(resource)) {
          records++;
          const row = held.get(`${sourceName(this.practice(i))}/${String(record[def.idField])}`);
          const modified = typeof record.ModifiedOn === 'string' ? record.ModifiedOn.slice(0, 19) : null;
          if (!row || (modified !== null && row.m < modified)) {
            lost++;
            if (examples.length < 5) examples.push(`${sourceName(this.practice(i))}/${resource}/${String(record[def.idField])}`);
          }
        }
      });
    }
    return { records, lost, duplicated, examples };
  }

  /** Run-queue jobs retried after their first attempt failed (a lost heartbeat), with when the retry started. */
  /**
   * Runs retried after a failure (a lost heartbeat), with when the retry could start: pg-boss sets `start_after` to
   * the failure plus the retry delay, so the failure's instant is read from it.
   */
  async retriedRuns(): Promise<Array<{ key: string; startAfter: Date; startedOn: Date | null; completedOn: Date | null }>> {
    const res = await this.pool.query<{ key: string; startAfter: Date; startedOn: Date | null; completedOn: Date | null }>(
      `SELECT singleton_key AS key, start_after AS "startAfter", started_on AS "startedOn", completed_on AS "completedOn"
         FROM pgboss.job WHERE name = 'pmsync-run' AND retry_count > 0`,
    );
    return res.rows;
  }

  /** Runs queued and not started, across replicas (the work a retried run may wait behind). */
  async queuedRuns(): Promise<number> {
    const res = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'pmsync-run' AND state IN ('created', 'retry')`,
    );
    return res.rows[0]?.n ?? 0;
  }

  /** Local time (HH:MM) of an instant in the fleet's zone. */
  localTime(ms: number): string {
    return new Intl.DateTimeFormat('en-GB', { timeZone: this.o.timeZone, hour: '2-digit', minute: '2-digit' }).format(ms);
  }

  async close(): Promise<void> {
    for (const r of this.live()) r.child.kill('SIGTERM');
    await Promise.all(
      this.replicas.map((r) => (r.alive ? new Promise<void>((resolve) => r.child.once('exit', () => resolve())) : undefined)),
    );
    await this.queue?.stop();
    await this.pool.end();
    await this.sim.close();
  }
}
