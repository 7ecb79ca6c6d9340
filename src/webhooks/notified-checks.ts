/**
 * Notified checks without serve: `pmsync webhooks receive`, with its worker,
 * checks the streams its notifications mark (webhooks.refresh "auto") while no
 * serve replica schedules them. The deployment this is for: a nightly cron
 * `pmsync sync` and the receiver, with no serve.
 *
 * The rules are serve's. At each tick (schedules.tickSeconds) every Core
 * source is observed and planned as serve's scheduler does (observeSource in
 * src/scheduler/scheduler.ts: the budget left, the notified changes, their
 * debounce and their bound), and only the checks the plan makes due for
 * notifications (purpose 'webhook') run, here, on the path serve's workers
 * take (src/scheduler/run-job.ts: the stream lock, the quota ledger, a window
 * reaching the latest notified change). Polled checks, floors, safety nets and
 * backfills are left to the cron job.
 *
 * Who acts is decided by serve's scheduling lock (src/state/locks.ts), not by
 * an option: a serve replica's leader holds it for as long as it lives. This
 * process takes it at a tick only when it is free, holds it while it decides
 * and runs that tick's checks, and lets it go. A serve replica started later
 * takes it at its next tick and keeps it, and from then on this process only
 * stores notifications; when the last serve replica stops, this process takes
 * over at its next tick. The two never decide at once, each check first claims
 * its notifications (stream_schedule.notified_until), and streams with a run
 * in serve's queue are left to it, so no notification is checked twice.
 */
import pLimit from 'p-limit';
import type { Config, SourceConfig } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import type { Redactor } from '../redact.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { runsInFlight, type RunJob } from '../scheduler/dispatch.ts';
import { planStreams, type ScheduledStream } from '../scheduler/plan.ts';
import { executeRun } from '../scheduler/run-job.ts';
import { observeSource } from '../scheduler/observe.ts';
import { holderName, serveSchedules, trySchedulingPass } from '../state/locks.ts';
import type { QuotaLedger } from '../state/quota.ts';
import { claimDispatch } from '../state/stream-schedule.ts';
import type { SyncContext } from '../sync/context.ts';
import { WEBHOOKS } from './catalog.ts';
import { notifiedStreams } from './receiver.ts';

export interface NotifiedChecksDeps {
  /** The configuration in force; its tick and its `webhooks.concurrency` are read once, at start. */
  config: () => Config;
  reload?: () => Promise<void>;
  ctx: SyncContext;
  pool: Pool;
  logger: Logger;
  redactor: Redactor;
  ledgerFor(source: SourceConfig): QuotaLedger;
}

/** here: this process checks notified streams; serve: a serve replica does. */
export type CheckMode = 'here' | 'serve';

export interface NotifiedChecks {
  /** Who checked notified streams at the last tick (at start: whether a serve replica held the lock). */
  mode(): CheckMode;
  /** One pass on the injected clock; returns the checks it ran. */
  tick(): Promise<RunJob[]>;
  /** Ticks every schedules.tickSeconds on the real clock until stop(). */
  startTimer(): void;
  /** Stops ticking and waits for the tick in progress (its runs stop at a page boundary on shutdown). */
  stop(): Promise<void>;
}

export async function startNotifiedChecks(deps: NotifiedChecksDeps): Promise<NotifiedChecks> {
  const log = deps.logger.child({ component: 'notified-checks' });
  const start = deps.config();
  const limit = pLimit(start.webhooks.concurrency);
  let mode: CheckMode = (await serveSchedules(deps.pool)) ? 'serve' : 'here';
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<RunJob[]> | null = null;
  let stopped = false;

  const become = (next: CheckMode) => {
    if (next === mode) return;
    mode = next;
    log.info(describeWebhookMode(deps.config(), { worker: true, serve: next === 'serve' }));
  };

  const observeAndClaim = async (
    config: Config,
    source: SourceConfig,
    streams: ScheduledStream[],
    now: Date,
    inFlight: Set<string>,
  ): Promise<RunJob[]> => {
    const view = await observeSource(
      { pool: deps.pool, ledgerFor: deps.ledgerFor, settings: config.schedules },
      source,
      streams.filter((s) => s.source === source.name),
      now,
      inFlight,
    );
    if (view.pausedUntil) return [];
    const jobs: RunJob[] = [];
    for (const sp of view.plan.streams) {
      if (sp.due?.purpose !== 'webhook') continue;
      const row = view.rows.get(sp.resource);
      const claimed = await claimDispatch(deps.pool, {
        source: source.name,
        resource: sp.resource,
        seen: row?.lastFireAt ?? null,
        at: now,
        purpose: 'webhook',
        reason: sp.due.reason,
        holder: holderName(),
        notifiedUntil: now,
      });
      if (!claimed) continue;
      jobs.push({
        source: source.name,
        resource: sp.resource,
        purpose: 'webhook',
        reason: sp.due.reason,
        firedAt: now.toISOString(),
        ...(sp.due.mustInclude ? { mustInclude: sp.due.mustInclude.toISOString() } : {}),
        notifiedBefore: row?.notifiedUntil?.toISOString() ?? null,
      });
    }
    return jobs;
  };

  const tickOnce = async (): Promise<RunJob[]> => {
    const config = deps.config();
    const notified = notifiedStreams(config);
    const sources = config.sources.filter((s) => s.kind === 'core' && [...notified].some((k) => k.startsWith(`${s.name}/`)));
    if (sources.length === 0) return [];
    const pass = await trySchedulingPass(deps.pool, 'notified checks');
    if (!pass) {
      // Another receiver's pass holds it for this tick alone; only a serve replica takes over.
      if (await serveSchedules(deps.pool)) become('serve');
      return [];
    }
    try {
      become('here');
      const now = deps.ctx.now();
      const streams = planStreams(config.schedules, config.sources, streamCatalog).streams;
      const inFlight = await runsInFlight(
        deps.pool,
        streams.map((s) => s.key),
      );
      const jobs: RunJob[] = [];
      for (const source of sources) {
        if (stopped) break;
        try {
          jobs.push(...(await observeAndClaim(config, source, streams, now, inFlight)));
        } catch (err) {
          log.error({ err, source: source.name }, 'could not plan the notified checks of this source; the next tick tries again');
        }
      }
      const runDeps = { ctx: deps.ctx, config: deps.config, reload: deps.reload, logger: deps.logger, redactor: deps.redactor };
      await Promise.all(
        jobs.map((job) =>
          limit(async () => {
            log.info({ source: job.source, resource: job.resource, reason: job.reason }, 'checking a notified stream');
            await executeRun(runDeps, job).catch((err: unknown) =>
              log.error(
                { err, source: job.source, resource: job.resource },
                'a notified check failed; its notifications wait for the next tick',
              ),
            );
          }),
        ),
      );
      return jobs;
    } finally {
      await pass.release();
    }
  };

  const tick = () => {
    ticking ??= tickOnce().finally(() => (ticking = null));
    return ticking;
  };
  const runTick = () => {
    if (stopped || ticking) return;
    void tick().catch((err: unknown) => log.error({ err }, 'notified checks: tick failed; the next tick tries again'));
  };

  return {
    mode: () => mode,
    tick,
    startTimer() {
      timer = setInterval(runTick, start.schedules.tickSeconds * 1000);
      runTick();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await ticking?.catch(() => undefined);
    },
  };
}

/** Webhook resources as a phrase: "customers, appointments and orders". */
function phrase(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * What a `webhooks receive` process does with notifications, in one line for
 * its start (and its log when a serve replica comes or goes).
 */
export function describeWebhookMode(config: Config, o: { worker: boolean; serve: boolean }): string {
  if (!o.worker) return 'webhooks: receive only; deliveries are stored for a process with a worker (serve, or webhooks receive)';
  const notified = notifiedStreams(config);
  const core = config.sources.filter((s) => s.kind === 'core');
  const resources = WEBHOOKS.recordUrls.map((r) => r.resource);
  const checked = resources.filter((r) => core.some((s) => notified.has(`${s.name}/${r}`)));
  const fetched = resources.filter((r) => core.some((s) => !notified.has(`${s.name}/${r}`)));
  const records = `each notification of ${phrase(fetched)} fetches its record here (one request per record, under the budget)`;
  if (checked.length === 0) return `webhooks: ${records}`;
  const also = fetched.length > 0 ? `; ${records}` : '';
  if (o.serve) {
    return `webhooks: a serve replica schedules these sources and checks their notified streams (${phrase(checked)}); this process does if no serve replica runs${also}`;
  }
  const s = config.schedules;
  return (
    `webhooks: no serve replica schedules these sources; notified streams (${phrase(checked)}) are checked here after a ${s.debounceSeconds} s debounce, ` +
    `within ${s.notifiedWithinMinutes} min while the budget allows (one check reads up to 100 changes a request)${also}`
  );
}
