/**
 * Running one job of the run queue: the stream's run through the same path
 * `pmsync sync` takes (its stream lock, its checkpoints), then what became of
 * the fire, for the scheduler's next decisions.
 */
import type { Config } from '../config-schema.ts';
import { QuotaExhaustedError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { recordRunEnd, type RunEnd } from '../state/stream-schedule.ts';
import type { SyncContext } from '../sync/context.ts';
import { syncSource, type SourceResult } from '../sync/sync-source.ts';
import type { RunJob } from './dispatch.ts';

export interface RunJobDeps {
  ctx: SyncContext;
  /** The configuration in force (a reload replaces it). */
  config: () => Config;
  /** Looks at the config file for a change now (src/serve/reload.ts). */
  reload?: () => Promise<void>;
  logger: Logger;
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
  const error = result.fatal ?? result.failures.find((f) => f.resource === job.resource)?.error;
  const end: RunEnd = { source: job.source, resource: job.resource, firedAt, at: ctx.now(), outcome: 'succeeded' };
  if (result.locked?.includes(job.resource)) end.outcome = 'locked';
  else if (error instanceof QuotaExhaustedError) {
    end.outcome = 'quota';
    end.pausedUntil = error.resumeAt;
    log.info(
      { resumeAt: error.resumeAt.toISOString(), scope: error.scope },
      'the share of the quota this run may spend is used up; the stream waits for the reset',
    );
  } else if (error || run?.status === 'failed' || run?.status === 'interrupted') {
    end.outcome = 'failed';
    // Its notifications were not read: they count as waiting again.
    if (job.purpose === 'webhook') end.notifiedUntil = job.notifiedBefore ? new Date(job.notifiedBefore) : null;
    if (error) log.warn({ err: error }, 'scheduled run did not succeed');
  }
  await recordRunEnd(ctx.pool, end);
}
