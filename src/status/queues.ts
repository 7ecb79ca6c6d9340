/**
 * Every read of a queue's depth in src/status: the webhook refresh queue
 * (status, the page, /metrics), the run queue's wait (/metrics) and the
 * streams with a run in flight (the scheduler's view of a source). Each goes
 * through the job queue open for the App's pool (src/queue.ts, pg-boss's own
 * API): serve's own, or in `pmsync status` one that only reads, open for the
 * time of the report (whileReadingQueues). These load pg-boss's modules: a
 * command that may not need them imports this module with `await import()`
 * (src/cli/main.ts).
 */
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { whileReading } from '../queue.ts';
import { runQueueWait, runsInFlight } from '../scheduler/dispatch.ts';
import { refreshQueueCounts, type RefreshQueueCounts } from '../webhooks/queue.ts';

/** Runs `read` with a job queue open for the App that only reads: for a process that works no queue (status). */
export function whileReadingQueues<T>(app: App, read: () => Promise<T>): Promise<T> {
  return whileReading(app, read);
}

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

/** Of `streams` (`source/resource`), those with a run waiting, retrying or running, in any process. */
export function streamsInFlight(db: Queryable, streams: Iterable<string>): Promise<Set<string>> {
  return runsInFlight(db, streams);
}
