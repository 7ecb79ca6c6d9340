/**
 * Runs the streams of one source, in order. A failed stream does not stop the
 * others, except for failures that doom them all: bad credentials, an exhausted
 * allowance or quota, or a shutdown. A spent scheduled-spend budget stops only
 * what spends it: the remaining checks are deferred to the next run (which
 * takes the stalest first) and backfills go on from the allowance.
 */
import type { ProSourceConfig, RestSourceConfig, SourceConfig } from '../config/schema.ts';
import { databaseLost, isConnectionError } from '../db/pool.ts';
import { PmsyncError, QuotaExhaustedError } from '../errors.ts';
import type { SyncContext } from './context.ts';
import { newProSession } from './readers/pro-session.ts';
import type { RunOptions, RunSummary } from './run-scope.ts';
import { runStream } from './run-stream.ts';
import { withAuthAdvice } from './source-kinds.ts';
import { selectProStreams, selectRestStreams } from './streams/index.ts';
import { planOrder } from './planner.ts';
import { withStreamLock } from '../state/locks.ts';
import { recordOutsideCheck } from '../state/stream-schedule.ts';

export interface SourceRunOptions extends RunOptions {
  /**
   * How long to wait when another process is running the same stream. 0 (the
   * default) skips the stream for this time: its next run picks up the changes.
   */
  lockWaitMs?: number;
}

export interface SourceResult {
  source: string;
  runs: RunSummary[];
  /** The error that ended the source early, if any. */
  fatal?: PmsyncError | Error;
  failures: Array<{ resource: string; error: Error }>;
  /** Resources skipped because another process was running them. */
  locked?: string[];
  /** The refusal that spent the day's scheduled-spend budget: the checks after it were deferred. */
  budgetSpent?: QuotaExhaustedError;
  /** Checks not run because the budget was spent: the next run takes them, stalest first. */
  deferred?: string[];
}

const FATAL_CODES = new Set(['AUTH_FAILED', 'QUOTA_EXHAUSTED', 'SHUTDOWN', 'DB_UNREACHABLE', 'API_UNREACHABLE', 'REDIS_UNREACHABLE']);

export async function syncSource(
  ctx: SyncContext,
  source: SourceConfig,
  resources?: string[],
  options: SourceRunOptions = {},
): Promise<SourceResult> {
  const result: SourceResult = { source: source.name, runs: [], failures: [] };
  const ordered = source.kind === 'pro' ? proPlan(source, resources, options) : await restPlan(ctx, source, resources, options);
  for (const stream of ordered) {
    if (ctx.signal.aborted) break;
    if (result.budgetSpent && stream.budgeted) {
      (result.deferred ??= []).push(stream.resource);
      continue;
    }
    try {
      const locked = await withStreamLock(ctx, source.name, stream.resource, { waitMs: options.lockWaitMs ?? 0 }, stream.run);
      if (locked.ran) {
        result.runs.push(locked.value);
        // Whoever ran it, the scheduler now knows every change up to the window's end was read.
        if (locked.value.windowEnd) await recordOutsideCheck(ctx.pool, source.name, stream.resource, locked.value.windowEnd);
      } else {
        ctx.logger.info({ source: source.name, resource: stream.resource }, 'another process is running this stream; skipped');
        (result.locked ??= []).push(stream.resource);
        const skipped = {
          inserted: 0,
          updated: 0,
          unchanged: 0,
          rejected: 0,
          pages: 0,
          requests: 0,
          runId: null,
          status: 'skipped' as const,
        };
        result.runs.push({
          ...skipped,
          source: source.name,
          resource: stream.resource,
          mode: stream.mode,
          error: 'another process is running this stream',
        });
      }
    } catch (thrown) {
      // A lost database fails every stream after it the same way: say so once, naming it, and stop.
      const err = isConnectionError(thrown) ? databaseLost(thrown, ctx.databaseUrl) : thrown;
      const code = err instanceof PmsyncError ? err.code : undefined;
      if (err instanceof QuotaExhaustedError && err.scope === 'budget') {
        // The refused check waits for the next run too (pages it read before the refusal stay; its window resumes as a backfill).
        result.budgetSpent = err;
        (result.deferred ??= []).push(stream.resource);
        continue;
      }
      if (code && FATAL_CODES.has(code)) {
        result.fatal = withAuthAdvice(source, err) as PmsyncError;
        break;
      }
      result.failures.push({ resource: stream.resource, error: err as Error });
    }
  }
  return result;
}

/** One stream of a source, ready to run. */
interface PlannedRun {
  resource: string;
  mode: string;
  /** Whether its run spends the scheduled-spend budget (a check or full refresh of a caught-up stream). */
  budgeted: boolean;
  run: (runCtx: SyncContext) => Promise<RunSummary>;
}

async function restPlan(
  ctx: SyncContext,
  source: RestSourceConfig,
  resources: string[] | undefined,
  options: RunOptions,
): Promise<PlannedRun[]> {
  const streams = selectRestStreams(source, resources);
  // Caught-up streams first, stalest first; backfills after (see planner.ts).
  const ordered = await planOrder(ctx, source, streams);
  const explicit = options.purpose !== undefined && options.purpose !== 'check' && options.purpose !== 'full';
  return ordered.map((plan): PlannedRun => ({
    resource: plan.stream.resource,
    mode: plan.stream.mode,
    budgeted: plan.phase === 'check' && !explicit,
    run: (runCtx) => runStream(runCtx, source, plan.stream, options),
  }));
}

/** Pro streams in registry order (fan-outs read keys stored by the lists before them), sharing one session. */
function proPlan(source: ProSourceConfig, resources: string[] | undefined, options: RunOptions): PlannedRun[] {
  const session = newProSession(source);
  return selectProStreams(source, resources).map((stream) => ({
    resource: stream.resource,
    mode: stream.kind === 'pro-snapshot' ? 'snapshot' : 'full',
    // Never deferred: each asks the ledger itself (a first pass is a backfill), and a refusal costs no request.
    budgeted: false,
    run: (runCtx) => runStream(runCtx, source, stream, { ...options, session }),
  }));
}
