/**
 * Every read of a queue's depth in src/status: the webhook refresh queue
 * (status, the page, /metrics), the run queue's wait (/metrics) and the
 * streams with a run in flight (the scheduler's view of a source). These
 * load pg-boss's modules: a command that may not need them imports this
 * module with `await import()` (src/cli/main.ts).
 */
import type { Config } from '../config-schema.ts';
import type { Queryable } from '../db/pool.ts';
import { runQueueWait, runsInFlight } from '../scheduler/dispatch.ts';
import { refreshQueueCounts, type RefreshQueueCounts } from '../webhooks/queue.ts';

/** The webhook refresh queue's counts; null when no source takes webhooks (only Core sources do). */
export async function webhookQueue(db: Queryable, config: Config): Promise<RefreshQueueCounts | null> {
  return config.sources.some((s) => s.kind === 'core') ? refreshQueueCounts(db) : null;
}

/** The webhook refresh queue as /metrics counts it: refreshes waiting, retrying or running, and dead letters. */
export async function webhookBacklog(db: Queryable): Promise<{ backlog: number; deadLetters: number }> {
  const c = await refreshQueueCounts(db);
  return { backlog: c.ready + c.deferred + c.retrying + c.active, deadLetters: c.deadLettered };
}

/** Runs queued and not started yet across replicas, and how long the oldest has waited. */
export function runQueue(db: Queryable): Promise<{ waiting: number; oldestWaitSeconds: number }> {
  return runQueueWait(db);
}

/** Streams (`source/resource`) with a run waiting, retrying or running, in any process. */
export function streamsInFlight(db: Queryable): Promise<Set<string>> {
  return runsInFlight(db);
}
