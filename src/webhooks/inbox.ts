/**
 * The inbox: every accepted delivery is a row of pmsync.webhook_events, keyed
 * by (source, EventId), committed before the receiver answers 2xx, so an
 * acknowledged event is never lost and a retried delivery is recognised.
 * A notification for a stream scheduled by budget stays a row ('notified')
 * that the scheduler reads; otherwise the row and the record's refresh job are
 * written in ONE transaction (a crash after the reply finds the job in the
 * queue, and a retried delivery never refreshes twice).
 */
import { withTransaction, type Pool } from '../db/pool.ts';
import { countDuplicate, insertEvent, setOutcome } from '../state/webhook-events.ts';
import type { Delivery } from './events.ts';
import type { RefreshQueue } from './queue.ts';

/**
 * - notified: its stream is marked for a check (the scheduler reads it);
 * - queued: a refresh of the record was queued;
 * - coalesced: a refresh of the record was already waiting and covers it;
 * - rejected: the Url was not a record URL pmsync accepts; nothing is fetched;
 * - duplicate: the EventId was received before (only a reply, never stored as such).
 */
export type InboxOutcome = 'notified' | 'queued' | 'coalesced' | 'rejected' | 'duplicate';

export interface InboxEvent {
  source: string;
  delivery: Delivery;
  /** The record to refresh, or why the Url was rejected. */
  target: { resource: string; id: string } | { reason: string };
  /** Mark the stream for a check instead of fetching the record. */
  notify: boolean;
  /** pmsync's clock at receipt: when the change became known. */
  receivedAt: Date;
}

export async function recordDelivery(pool: Pool, queue: Pick<RefreshQueue, 'enqueue'>, event: InboxEvent): Promise<InboxOutcome> {
  const { source, delivery: d, target } = event;
  const record = 'resource' in target ? target : null;
  return withTransaction(pool, async (tx) => {
    const inserted = await insertEvent(tx, {
      source,
      delivery: d,
      resource: record?.resource ?? null,
      recordId: record?.id ?? null,
      outcome: record ? (event.notify ? 'notified' : 'queued') : 'rejected',
      reason: 'reason' in target ? target.reason : null,
      receivedAt: event.receivedAt,
    });
    if (!inserted) {
      await countDuplicate(tx, source, d.EventId);
      return 'duplicate';
    }
    if (!record) return 'rejected';
    if (event.notify) return 'notified';
    const queued = await queue.enqueue({ source, resource: record.resource, id: record.id }, { db: tx });
    if (queued) return 'queued';
    await setOutcome(tx, source, d.EventId, 'coalesced');
    return 'coalesced';
  });
}
