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
import { markReported, type SourceHealth } from '../state/source-health.ts';
import { ChangeReader, healthScope, keyScope, modelScope, streamOfScope } from '../state/source-changes.ts';
import {
  claimDispatch,
  claimDispatches,
  loadStreamSchedules,
  setWarning,
  type Claim,
  type StreamScheduleRow,
} from '../state/stream-schedule.ts';
import { SHARD_LOCK_CLASS, shardOf, type ShardLeases } from '../state/locks.ts';
import { previousFire } from '../cron.ts';
import { runKey, type Dispatcher, type RunJob } from './dispatch.ts';
import type { SourcePlan } from './budget.ts';
import { planStreams, sourceTimeZone, type ScheduledStream, type StreamEntry } from './plan.ts';
import type { ScheduleSettings } from '../config/schedules.ts';
import {
  localWeekday,
  readModels,
  readSources,
  readSourcesAgain,
  canReadInPart,
  REREAD_MS,
  sightAt,
  viewAt,
  type ModelReading,
  type SourceReadings,
  type SourceView,
} from './observe.ts';
import { dispatches, nextWake, type GuessBase, type WokenView } from './wake.ts';

/**
 * Sources decided at once within a tick: a decision may write a warning or a
 * health report; overlapping two keeps those writes from serializing a busy
 * tick while leaving the pool's other connections to the runs. The tick's
 * claims follow, together, then its queue inserts, a run at a time
 * (dispatchAll).
 */
const SOURCES_AT_ONCE = 2;

/**
 * How long a source's last plan is kept for status and metrics (view()). A
 * source is planned only when its inputs change or its plan can, so most of a
 * fleet's plans are older than this; the readers observe those afresh (what
 * they show is of now, not of the last plan), and kept for every source the
 * plans were a tenth of a replica's heap over a thousand sources.
 */
export const VIEW_KEPT_MS = 60_000;

/** What shardsHeld says of a scheduler that decides every source (no shards: tests, benchmarks). */
const SHARDS_WITHOUT_LEASES = 1;

/** A run a source's plan dispatches, claimed and queued with the rest of its tick's. */
interface Intent {
  job: RunJob;
  claim: Claim;
}

/** A configured source as a tick uses it. */
interface Entry {
  source: SourceConfig;
  streams: ScheduledStream[];
  shard: number;
  zone: string;
  /** Its gateway key's quota ledger in the change log. */
  keyScope: string;
}

/** What the decider holds of a source between ticks. */
interface Known {
  readings: SourceReadings;
  /** When the source was last read whole (readings.at may be later: its changed streams read again since). */
  fullAt: number;
  /** Per stream its model (null: none stored yet: the stream has no rates of its own). */
  models: Map<string, ModelReading | null>;
  /** The streams that have a model, as the plan takes them; rebuilt when a model is read again. */
  modelled: Map<string, ModelReading> | null;
  /** Planned again at the first tick at or after this (epoch ms). */
  wakeAt: number;
  /**
   * What the wake knew at wakeAt (the plan it made there, which dispatches, or the search to resume there), with
   * what it was made from: used instead of planning again when the source is planned at that tick from the same
   * readings, models, streams in flight, streams and settings.
   */
  woken: Woken | null;
  /**
   * The latest plan made for the source (at a tick or by the wake's search): when the source is read again, the
   * search for its next dispatching tick guesses from its exchange rate and interval (decideSource).
   */
  lastPlan: SourcePlan | null;
}

type Woken = WokenView & {
  readings: SourceReadings;
  models: Map<string, ModelReading>;
  inFlight: string;
  streams: ScheduledStream[];
  settings: ScheduleSettings;
};

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
  /** The scheduling shards this replica decides (src/state/locks.ts); without, it decides every source. */
  shards?: ShardLeases;
  /** Reports each tick this replica decided: how long it took and how many runs it dispatched. */
  onTick?: (seconds: number, dispatched: number) => void;
  /**
   * Plan every source at every tick instead of only at the instants its plan
   * can change (src/scheduler/wake.ts). The decisions are the same; this is
   * how tests show it.
   */
  planEveryTick?: boolean;
}

export interface DecideStats {
  /** Sources this replica decides. */
  sources: number;
  /** Sources read again from state (whole, or in part). */
  read: number;
  /** Of those, sources of which only the changed streams were read (with their ledger, health and registrations). */
  readInPart: number;
  /** Sources planned at this tick. */
  planned: number;
  /**
   * Of those, sources whose wake's search resumed at this tick (src/scheduler/wake.ts): no plan was made at the tick
   * itself, only its probes.
   */
  resumed: number;
  /** Plans made at later instants to find when each planned source can next dispatch (src/scheduler/wake.ts). */
  probes: number;
  dispatched: number;
}

/** Which of a source's streams are in flight, as one string: a plan depends on no other part of the set. */
function inFlightOf(streams: ScheduledStream[], inFlight: Set<string>): string {
  let out = '';
  for (const s of streams) if (inFlight.has(s.key)) out += `${s.key}\n`;
  return out;
}

/** The source is paused at `now` (its last run found it failing). */
function pausedAt(readings: SourceReadings, now: Date): boolean {
  return !!readings.health?.pausedUntil && readings.health.pausedUntil > now;
}

/** Webhooks are registered for the source at `now` (observe.ts reads today's activity up to the minute then). */
function webhooksAt(readings: SourceReadings, now: Date): boolean {
  return readings.webhooksUntil !== null && readings.webhooksUntil > now.getTime();
}

export class Scheduler {
  private readonly deps: SchedulerDeps;
  private config: Config;
  private settings: ScheduleSettings;
  private planned: ScheduledStream[];
  private readonly views = new Map<string, SourceView>();
  private readonly known = new Map<string, Known>();
  private readonly changes = new ChangeReader();
  /** Streams in flight at the last tick: one that starts or ends changes its source's plan. */
  private lastInFlight = new Set<string>();
  /** The configuration changed since the last tick: every source is read and planned again. */
  private reconfigured = true;
  /** Per source, what a tick needs of it without recomputing: built with each configuration. */
  private index = new Map<string, Entry>();
  /** Change-log scopes to the sources they concern (a gateway key may serve several). */
  private byScope = new Map<string, string[]>();
  /** The sources of the shards held at the last tick, and which shards those were. */
  private mine: { shards: string; entries: Entry[]; streams: ScheduledStream[]; keys: string[] } = {
    shards: '',
    entries: [],
    streams: [],
    keys: [],
  };
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
    for (const name of this.known.keys()) if (!names.has(name)) this.known.delete(name);
    this.reconfigured = true;
    if (retick && this.timer && !this.stopped) {
      clearInterval(this.timer);
      this.timer = setInterval(() => this.runTick(), this.settings.tickSeconds * 1000);
    }
  }

  private plan(config: Config): ScheduledStream[] {
    const planned = planStreams(config.schedules, config.sources, this.deps.catalog);
    if (planned.problems.length > 0) throw new ConfigError(planned.problems);
    const index = new Map<string, Entry>();
    const byScope = new Map<string, string[]>();
    const scoped = (scope: string, name: string) => byScope.set(scope, [...(byScope.get(scope) ?? []), name]);
    for (const source of config.sources) {
      const streams = planned.streams.filter((x) => x.source === source.name);
      const key = keyScope(this.deps.ledgerFor(source).settings.keyId);
      index.set(source.name, { source, streams, shard: shardOf(source.name), zone: sourceTimeZone(source), keyScope: key });
      scoped(source.name, source.name);
      scoped(healthScope(source.name), source.name);
      scoped(key, source.name);
      for (const x of streams) scoped(modelScope(source.name, x.resource), source.name);
    }
    this.index = index;
    this.byScope = byScope;
    this.mine = { shards: '', entries: [], streams: [], keys: [] };
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

  /** Stops ticking; the shards it decides are given back once its tick in progress ends. */
  stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const ticking = this.ticking?.catch(() => undefined);
    return (async () => {
      await ticking;
      await this.deps.shards?.release();
    })();
  }

  /** The source's last view, when it was planned within the last VIEW_KEPT_MS (as of the last tick). */
  view(source: string): SourceView | undefined {
    return this.views.get(source);
  }

  /** One pass over every source: decides and dispatches. Returns what it dispatched. */
  tick(): Promise<RunJob[]> {
    this.ticking ??= this.tickOnce().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** The scheduling shards this replica decided at its last tick (every one, without shards). */
  shardsHeld = 0;

  /** Whether this replica decided some sources at its last tick. */
  get deciding(): boolean {
    return this.shardsHeld > 0;
  }

  /** Whether this replica decides `source` (it held the source's shard at its last tick). */
  decides(source: string): boolean {
    return this.decidesShard(this.index.get(source)?.shard ?? shardOf(source));
  }

  /** Whether this replica decides the sources of `shard` (every shard without shard leases). */
  decidesShard(shard: number): boolean {
    return !this.deps.shards || this.deps.shards.held.has(shard);
  }

  /** Told what each tick decided: sources read again, sources planned (benchmarks and tests count them). */
  onDecide?: (stats: DecideStats) => void;

  private async tickOnce(): Promise<RunJob[]> {
    const held = this.deps.shards ? await this.deps.shards.sync() : null;
    const count = held ? held.size : SHARDS_WITHOUT_LEASES;
    if (count !== this.shardsHeld) {
      if (held)
        this.deps.logger.info({ shards: [...held].sort((a, b) => a - b) }, `this replica now decides ${count} of the scheduling shards`);
      this.shardsHeld = count;
    }
    if (held && held.size === 0) {
      this.known.clear();
      return [];
    }
    // A source whose shard passed to another replica is forgotten: if it comes back, what was read of it is stale.
    if (held) for (const name of this.known.keys()) if (!held.has(this.index.get(name)?.shard ?? -1)) this.known.delete(name);
    const started = performance.now();
    const now = this.deps.now();
    const t = now.getTime();
    const shardKey = held ? [...held].sort((a, b) => a - b).join(',') : '*';
    if (this.mine.shards !== shardKey) {
      const entries = [...this.index.values()].filter((e) => !held || held.has(e.shard));
      const streams = entries.flatMap((e) => e.streams);
      this.mine = { shards: shardKey, entries, streams, keys: streams.map((x) => x.key) };
    }
    const { entries: mine, keys } = this.mine;
    const [inFlight, changed] = await Promise.all([this.deps.dispatcher.inFlight(this.deps.pool, keys), this.changes.poll(this.deps.pool)]);
    const reconfigured = this.reconfigured;
    this.reconfigured = false;

    // Which sources to look at: those the change log names, those a run started or ended for, those whose plan can
    // dispatch now, and those not read yet. Every other source costs nothing at this tick.
    const candidates = new Set<string>();
    // Per source, the streams whose own rows changed (their `stream:` scopes): read again alone.
    const streamsChanged = new Map<string, Set<string>>();
    for (const scope of changed) {
      const stream = streamOfScope(scope);
      if (!stream) {
        for (const name of this.byScope.get(scope) ?? []) candidates.add(name);
        continue;
      }
      if (!this.index.has(stream.source)) continue;
      candidates.add(stream.source);
      const set = streamsChanged.get(stream.source);
      if (set) set.add(stream.resource);
      else streamsChanged.set(stream.source, new Set([stream.resource]));
    }
    for (const key of inFlight) if (!this.lastInFlight.has(key)) candidates.add(key.slice(0, key.indexOf('/')));
    for (const key of this.lastInFlight) if (!inFlight.has(key)) candidates.add(key.slice(0, key.indexOf('/')));
    this.lastInFlight = inFlight;
    for (const e of mine) {
      const k = this.known.get(e.source.name);
      if (reconfigured || this.deps.planEveryTick || !k || k.wakeAt <= t) candidates.add(e.source.name);
    }

    // What to read again of them: sources whose rows changed (their key's quota ledger included), whose quota day
    // turned, or read too long ago; streams whose model changed or whose practice's weekday turned. A source is read
    // whole when first seen, reconfigured, at its quota day's turn, an hour after it was last read whole, or when what
    // was read of it moved with the clock in a way only a whole read follows (canReadInPart); otherwise only its
    // changed streams, with its ledger, health and webhook registrations (readSourcesAgain): the same readings.
    const reread: SourceConfig[] = [];
    const readAgain: Array<{ source: SourceConfig; readings: SourceReadings; resources: ReadonlySet<string> }> = [];
    const remodel: ScheduledStream[] = [];
    const replan = new Set<string>();
    for (const name of candidates) {
      const e = this.index.get(name);
      if (!e || (held && !held.has(e.shard))) continue;
      replan.add(name);
      const k = this.known.get(name);
      const streamsRead = streamsChanged.get(name);
      const whole = !k || reconfigured || changed.has(name) || t >= k.readings.quota.resetsAt.getTime();
      if (whole || streamsRead || changed.has(e.keyScope) || changed.has(healthScope(name)) || t - k.readings.at.getTime() >= REREAD_MS) {
        if (whole || t - k.fullAt >= REREAD_MS || !canReadInPart(k.readings, now)) reread.push(e.source);
        else readAgain.push({ source: e.source, readings: k.readings, resources: streamsRead ?? new Set() });
      }
      const weekday = localWeekday(now, e.zone);
      for (const x of e.streams) {
        const m = k?.models.get(x.resource);
        if (!k || m === undefined || changed.has(modelScope(name, x.resource)) || (m !== null && m.today !== weekday)) remodel.push(x);
      }
    }
    // Each read is given the streams of the sources it reads, not the replica's every stream: it walks what it is given.
    const streamsOf = (sources: readonly SourceConfig[]) => sources.flatMap((s) => this.index.get(s.name)!.streams);
    const [readings, readInPart, models] = await Promise.all([
      reread.length > 0 ? readSources(this.deps, reread, streamsOf(reread), now) : new Map<string, SourceReadings>(),
      readAgain.length > 0
        ? readSourcesAgain(this.deps, readAgain, streamsOf(readAgain.map((a) => a.source)), now)
        : new Map<string, SourceReadings>(),
      remodel.length > 0
        ? readModels(this.deps.pool, remodel, now, (name) => this.index.get(name)?.zone ?? 'UTC')
        : new Map<string, Map<string, ModelReading>>(),
    ]);
    for (const source of reread) {
      const prev = this.known.get(source.name);
      this.known.set(source.name, {
        readings: readings.get(source.name)!,
        fullAt: t,
        models: prev?.models ?? new Map(),
        modelled: prev?.modelled ?? null,
        wakeAt: t,
        woken: null,
        lastPlan: prev?.lastPlan ?? null,
      });
    }
    for (const { source } of readAgain) {
      const k = this.known.get(source.name)!;
      k.readings = readInPart.get(source.name)!;
      k.wakeAt = t;
      k.woken = null;
    }
    for (const x of remodel) {
      const k = this.known.get(x.source)!;
      k.models.set(x.resource, models.get(x.source)?.get(x.resource) ?? null);
      k.modelled = null;
    }

    const planned = [...replan].map((name) => this.index.get(name)!.source);
    const probes = { count: 0, resumed: 0 };
    const limit = pLimit(SOURCES_AT_ONCE);
    const intents = await Promise.all(
      planned.map((listed) =>
        limit(async () => {
          if (this.stopped) return [];
          // A reload during this tick may have changed or removed it; a lost shard connection took its shard.
          const entry = this.index.get(listed.name);
          if (!entry || !this.decides(listed.name)) return [];
          try {
            return await this.decideSource(entry.source, entry.streams, now, inFlight, probes);
          } catch (err) {
            this.known.delete(listed.name);
            this.deps.logger.error({ err, source: listed.name }, 'could not schedule this source at this tick; the next tick tries again');
            return [];
          }
        }),
      ),
    );
    const jobs = await this.dispatchAll(intents.flat(), inFlight);
    for (const [name, v] of this.views) if (t - v.at.getTime() >= VIEW_KEPT_MS) this.views.delete(name);
    this.onDecide?.({
      sources: mine.length,
      read: reread.length + readAgain.length,
      readInPart: readAgain.length,
      planned: planned.length,
      resumed: probes.resumed,
      probes: probes.count,
      dispatched: jobs.length,
    });
    this.deps.onTick?.((performance.now() - started) / 1000, jobs.length);
    return jobs;
  }

  /** Plans one source at `now`, dispatches what is due, and sets when to plan it next. */
  private async decideSource(
    source: SourceConfig,
    streams: ScheduledStream[],
    now: Date,
    inFlight: Set<string>,
    probes: { count: number; resumed: number },
  ): Promise<Intent[]> {
    const k = this.known.get(source.name)!;
    if (!k.modelled) {
      k.modelled = new Map();
      for (const [resource, m] of k.models) if (m) k.modelled.set(resource, m);
    }
    const models = k.modelled;
    const woken = k.woken;
    k.woken = null;
    const same =
      woken !== null &&
      woken.at === now.getTime() &&
      woken.readings === k.readings &&
      woken.models === models &&
      woken.streams === streams &&
      woken.settings === this.settings &&
      woken.inFlight === inFlightOf(streams, inFlight);
    const wake = (at: Date, base: GuessBase, resumed: boolean, nextFires: Iterable<Date | null>) =>
      nextWake(
        { source, streams, readings: k.readings, models, inFlight, settings: this.settings, now: at },
        nextFires,
        probes,
        base,
        (found) => {
          k.woken = { ...found, readings: k.readings, models, inFlight: inFlightOf(streams, inFlight), streams, settings: this.settings };
          k.lastPlan = 'view' in found ? found.view.plan : found.resume.plan;
        },
        resumed,
      );
    let view: SourceView;
    if (same && 'view' in woken) view = woken.view;
    else if (!same && k.lastPlan && !this.deps.planEveryTick && !pausedAt(k.readings, now) && !webhooksAt(k.readings, now)) {
      // Read again since it was last planned (a run of it ended, a notification came): the first tick that dispatches
      // is searched for from this one on, as a resumed search is, without a plan made here first. Its guess takes the
      // source's inputs now under the exchange rate and interval of the plan before, which change little from one
      // tick to the next; the search checks it with whole plans, so only the ticks probed depend on it. A plan made
      // here first served only as that guess's base: the source costs a plan less each time it is read again. Its
      // freshness warnings are compared at the ticks it is planned at (sayOnce), its health here.
      //
      // Not where webhooks are registered: a plan made here decides this tick itself. Today's activity was read up to
      // the minute there, fell between reads, and a search from this tick took the segment's last tick, no longer due,
      // to say none of its ticks was (6 of 14,285 dispatches two ticks late at 100 sources with webhooks). It is now
      // read up to the source's last reading (observe.ts, forecastOf); this plan is kept until a day with webhooks
      // compared both ways, dispatch by dispatch (bench/decider.ts --dispatches), shows it can go.
      const sight = sightAt(source, streams, k.readings, models, now, inFlight, this.settings);
      const at = wake(now, { input: sight.input, plan: k.lastPlan }, true, sight.nextFires.values());
      const handed = k.woken as Woken | null;
      if (at !== now.getTime() || !handed || !('view' in handed)) {
        probes.resumed++;
        k.wakeAt = at;
        this.views.delete(source.name);
        await this.sayHealth(source.name, k.readings.health);
        return [];
      }
      k.woken = null;
      view = handed.view;
    } else if (same && 'resume' in woken) {
      // No plan was made in the segment that starts here: the search goes on from this tick, and the source is planned
      // here only if one of the segment's ticks dispatches, this one first.
      probes.resumed++;
      const at = wake(now, woken.resume, true, woken.resume.nextFires.values());
      const handed = k.woken as Woken | null;
      if (at !== now.getTime() || !handed || !('view' in handed)) {
        k.wakeAt = at;
        return [];
      }
      k.woken = null;
      view = handed.view;
    } else view = viewAt(source, streams, k.readings, models, now, inFlight, this.settings);
    k.lastPlan = view.plan;
    this.views.set(source.name, view);
    await this.sayHealth(source.name, view.health);
    if (view.pausedUntil) {
      k.wakeAt = view.pausedUntil.getTime();
      return [];
    }
    const intents: Intent[] = [];
    const pid = this.deps.shards?.pid;
    const dispatch = (s: ScheduledStream, job: Omit<RunJob, 'source' | 'resource' | 'firedAt'>, at: Date, notifiedUntil?: Date) =>
      intents.push({
        job: { source: s.source, resource: s.resource, firedAt: at.toISOString(), ...job },
        claim: {
          source: s.source,
          resource: s.resource,
          seen: view.rows.get(s.resource)?.lastFireAt ?? null,
          at,
          purpose: job.purpose,
          reason: job.reason,
          holder: this.deps.holder,
          notifiedUntil,
          ...(this.deps.shards ? { fence: { lockClass: SHARD_LOCK_CLASS, key: shardOf(s.source), pid: pid ?? -1 } } : {}),
        },
      });
    for (const fire of view.cronFires) {
      if (fire.reason === 'resume')
        this.deps.logger.info({ source: source.name, resource: fire.stream.resource }, 'resuming a run stopped part-way');
      dispatch(fire.stream, { purpose: fire.purpose, reason: fire.reason }, fire.at);
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
      dispatch(s, job, now, webhook ? now : undefined);
    }
    await this.sayOnce(source.name, view.plan, view.rows);
    // A dispatch (or a claim another process won) changes what the source is planned from: the change log says so
    // and it is read again at the next tick. Otherwise it is planned again when its plan can next dispatch.
    k.wakeAt = dispatches(view) || this.deps.planEveryTick ? now.getTime() : wake(now, view, false, view.nextFires.values());
    return intents;
  }

  /**
   * Claims the tick's dispatches together (a statement per CLAIM_BATCH, not a
   * round trip each) and queues those won, in the order they were decided.
   */
  private async dispatchAll(intents: Intent[], inFlight: Set<string>): Promise<RunJob[]> {
    if (intents.length === 0 || this.stopped) return [];
    const won = await claimDispatches(
      this.deps.pool,
      intents.map((i) => i.claim),
    );
    const jobs: RunJob[] = [];
    for (const [i, { job }] of intents.entries()) {
      if (!won[i]) continue;
      try {
        await this.deps.dispatcher.dispatch(job);
      } catch (err) {
        // Claimed and not queued: the claim's fire has no run, which inFlight reports until it ends or is replaced.
        this.known.delete(job.source);
        this.deps.logger.error(
          { err, source: job.source, resource: job.resource },
          'could not queue this run; the next tick plans its source again',
        );
        continue;
      }
      inFlight.add(runKey(job));
      this.deps.onDispatch?.(job);
      jobs.push(job);
    }
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
}
