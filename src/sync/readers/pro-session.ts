/**
 * What the Pro readers share: paths below the practice, the page sizes
 * learned from the server, and whether the practice is confirmed.
 */
import { PageSizes, type ProPagerOptions } from '../../api/pro-pager.ts';
import type { ProSourceConfig } from '../../config/schema.ts';
import type { WindowCheckpoint } from '../../state/checkpoints.ts';
import { idReader } from '../page.ts';
import type { RunOptions, RunScope } from '../run-scope.ts';

/** What the runs of one Pro source share within one process. */
export interface ProSession {
  pageSizes: PageSizes;
  /** Set once a request below /practices/{practiceId} succeeded: the token and practice are good. */
  practiceConfirmed: boolean;
}

export function newProSession(source: ProSourceConfig): ProSession {
  return { pageSizes: new PageSizes(source.pageLimit), practiceConfirmed: false };
}

export interface ProRunOptions extends RunOptions {
  /** Shared by the runs of one source in one sync; a fresh one is made when absent. */
  session?: ProSession;
}

/** Where an unfinished Pro window will resume, in words (for status). */
export function describePosition(window: WindowCheckpoint): string | null {
  const extra = window.extra ?? {};
  if (Array.isArray(extra.eventTypeIds)) return `at event type ${Number(extra.done ?? 0) + 1} of ${extra.eventTypeIds.length}`;
  if (typeof extra.after === 'number') return extra.after === 0 ? 'at the first key' : `after key ${extra.after}`;
  return null;
}

/** Every Pro path begins /practices/{practiceId}. */
export function practicePath(source: ProSourceConfig, path: string): string {
  return `/practices/${source.practiceId}${path}`;
}

/**
 * Waits for every task, then throws the first failure: a failed request does
 * not leave its siblings running after the run has been recorded as ended.
 */
export async function allSettledOrThrow<T>(tasks: Array<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(tasks);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** Pager options for one list read of a run. */
export function pagerOptions(
  run: RunScope,
  source: ProSourceConfig,
  session: ProSession,
  idOf: string | ((raw: unknown) => string | null),
  startPage = 1,
): ProPagerOptions {
  return {
    limit: source.pageLimit,
    startPage,
    sizes: session.pageSizes,
    idOf: typeof idOf === 'string' ? idReader(idOf) : idOf,
    warn: (message: string, details: Record<string, unknown>) => run.log.warn(details, message),
  };
}

/** A fresh Pro window: Pro lists carry no modification filter, so a window is bounded by when it opened. */
export function freshProWindow(
  mode: 'full' | 'incremental',
  start: Date | null,
  now: Date,
  extra?: Record<string, unknown>,
): WindowCheckpoint {
  return {
    mode,
    start: start?.toISOString() ?? null,
    end: now.toISOString(),
    nextPage: 1,
    filters: {},
    startedAt: now.toISOString(),
    totalRows: null,
    extra,
  };
}
