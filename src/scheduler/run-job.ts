/**
 * Running one job of the run queue: the stream's run through the same path
 * `pmsync sync` takes (its stream lock, its checkpoints), then what became of
 * the fire, for the scheduler's next decisions, and of the source: a run that
 * failed as the whole source fails (src/scheduler/source-failures.ts) pauses
 * it, a run that reached the source ends the pause. A job of a source paused
 * after it was queued is dropped without a request: the scheduler dispatches
 * the stream again when the pause ends.
 */
import type { Config } from '../config/schema.ts';
import { QuotaExhaustedError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Redactor } from '../redact.ts';
import { recordSourceFailure, recordSourceSuccess, sourcePausedUntil } from '../state/source-health.ts';
import { recordRunEnd, type RunEnd } from '../state/stream-schedule.ts';
import type { SyncContext } from '../sync/context.ts';
import { syncSource, type SourceResult } from '../sync/sync-source.ts';
import type { RunJob } from './dispatch.ts';
import { classifyFailure, PAUSES } from './source-failures.ts';

export interface RunJobDeps {
  ctx: SyncContext;
  /** The configuration in force (a reload replaces it). */
  config: () => Config;
  /** Looks at the config file for a change now (src/serve/reload.ts). */
  reload?: () => Promise<void>;
  logger: Logger;
  /** Error messages are stored in pmsync.source_health only through it. */
  redactor: Redactor;
  /** Reports each finished run (metrics). */
  onRun?: (job: RunJob, result: SourceResult, seconds: number) => void;
}

export async function executeRun(deps: RunJobDeps, job: RunJob): Promise<void> {
  const { ctx } = deps;
  const log = deps.logger.child({ source: job.source, resource: job.resource, purpose: job.purpose, reason: job.reason });
  const find = () => deps.config().sources.find((s) => s.name === job.source);
  let source = find();
  // Another replica may have taken a new config file first: this one looks at it before giving up.
  if (!source && deps.reload) {
    await deps.reload();
    source = find();
  }
  const firedAt = new Date(job.firedAt);
  if (!source) {
    log.warn('the source is not configured in this replica; the run is dropped');
    return;
  }
  const end: RunEnd = { source: job.source, resource: job.resource, firedAt, at: ctx.now(), outcome: 'succeeded' };
  // Its notifications were not read: they count as waiting again.
  const handBack = () => {
    if (job.purpose === 'webhook') end.notifiedUntil = job.notifiedBefore ? new Date(job.notifiedBefore) : null;
  };
  const pausedUntil = await sourcePausedUntil(ctx.pool, job.source, end.at);
  if (pausedUntil) {
    log.debug({ pausedUntil: pausedUntil.toISOString() }, 'the source was paused after this run was queued; the run is dropped');
    end.outcome = 'paused';
    handBack();
    await recordRunEnd(ctx.pool, end);
    return;
  }
  const mustInclude = job.mustInclude ? new Date(job.mustInclude) : undefined;
  const options = {
    purpose: job.purpose === 'backfill' ? undefined : job.purpose,
    mustInclude,
    lockWaitMs: 0,
    checkPages: deps.config().schedules.checkPages,
  };
  const started = performance.now();
  let result = await syncSource(ctx, source, [job.resource], options);
  const first = result.runs.find((r) => r.resource === job.resource);
  // A run that resumed an older window stopped short of the notified change: read on to it.
  if (mustInclude && first?.status === 'succeeded' && first.windowEnd && first.windowEnd < mustInclude && !ctx.signal.aborted) {
    result = await syncSource(ctx, source, [job.resource], options);
  }
  deps.onRun?.(job, result, (performance.now() - started) / 1000);

  const run = result.runs.find((r) => r.resource === job.resource);
  const error = result.fatal ?? result.budgetSpent ?? result.failures.find((f) => f.resource === job.resource)?.error;
  end.at = ctx.now();
  if (result.locked?.includes(job.resource)) {
    // Another process's run of the stream (a cron `pmsync sync`) may have started before the notified changes.
    end.outcome = 'locked';
    handBack();
  } else if (error instanceof QuotaExhaustedError) {
    end.outcome = 'quota';
    end.pausedUntil = error.resumeAt;
    log.info(
      { resumeAt: error.resumeAt.toISOString(), scope: error.scope },
      'the share of the quota this run may spend is used up; the stream waits for the reset',
    );
  } else if (error || run?.status === 'failed' || run?.status === 'interrupted') {
    end.outcome = 'failed';
    handBack();
    const failure = error ? classifyFailure(error) : null;
    if (failure && error) {
      const health = await recordSourceFailure(ctx.pool, {
        source: job.source,
        ...failure,
        message: deps.redactor.redact(error.message),
        at: end.at,
        ...PAUSES[failure.kind],
      });
      log.warn(
        { err: error, failure: failure.kind, failures: health.consecutiveFailures, pausedUntil: health.pausedUntil?.toISOString() },
        'scheduled run failed as the whole source fails; the source is paused',
      );
    } else if (error) log.warn({ err: error }, 'scheduled run did not succeed');
  } else if (run && run.requests > 0) {
    await recordSourceSuccess(ctx.pool, job.source, end.at);
  }
  await recordRunEnd(ctx.pool, end);
}
