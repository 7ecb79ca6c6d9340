/**
 * pmsync.webhook_events: one row per accepted delivery, keyed by (source,
 * EventId), for deduplication and the record of what each notification led to
 * (src/webhooks/inbox.ts).
 */
import type { Queryable } from '../db/pool.ts';

/** The members of a delivery's body that are stored (src/webhooks/events.ts, Delivery, is one). */
export interface StoredDelivery {
  Application: string;
  TenantId: string;
  EventId: string;
  EventType: string;
  EventTimestamp: string;
  Url: string;
}

export interface EventRow {
  source: string;
  delivery: StoredDelivery;
  resource: string | null;
  recordId: string | null;
  outcome: 'notified' | 'queued' | 'coalesced' | 'rejected';
  reason: string | null;
  receivedAt: Date;
}

/** Stores a delivery; false when its EventId was received before (nothing is written then). */
export async function insertEvent(db: Queryable, e: EventRow): Promise<boolean> {
  const d = e.delivery;
  const res = await db.query(
    `INSERT INTO pmsync.webhook_events (source, event_id, event_type, tenant_id, application, event_timestamp, url, resource, record_id, outcome, reason, received_at, last_received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
     ON CONFLICT (source, event_id) DO NOTHING`,
    [
      e.source,
      d.EventId,
      d.EventType,
      d.TenantId,
      d.Application,
      new Date(d.EventTimestamp),
      d.Url,
      e.resource,
      e.recordId,
      e.outcome,
      e.reason,
      e.receivedAt,
    ],
  );
  return (res.rowCount ?? 0) > 0;
}

/** A delivery of an event already stored: counted, not stored again. */
export async function countDuplicate(db: Queryable, source: string, eventId: string): Promise<void> {
  await db.query(
    'UPDATE pmsync.webhook_events SET duplicates = duplicates + 1, last_received_at = now() WHERE source = $1 AND event_id = $2',
    [source, eventId],
  );
}

export async function setOutcome(db: Queryable, source: string, eventId: string, outcome: EventRow['outcome']): Promise<void> {
  await db.query('UPDATE pmsync.webhook_events SET outcome = $3 WHERE source = $1 AND event_id = $2', [source, eventId, outcome]);
}

/** Deletes events older than the retention; deduplication only needs the API's retry window (about 5 minutes). */
export async function pruneEvents(db: Queryable, retentionDays: number): Promise<number> {
  const res = await db.query(`DELETE FROM pmsync.webhook_events WHERE received_at < now() - make_interval(days => $1)`, [retentionDays]);
  return res.rowCount ?? 0;
}
