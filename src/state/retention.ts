/**
 * Retention: copies of patient data pmsync keeps besides the tables are
 * deleted once past their configured age, by the database's clock:
 * quarantined payloads not seen again, schema-drift findings not updated,
 * webhook event rows, and (when a history retention is set) history versions
 * that stopped being current. Current rows are never touched. Each purge is
 * recorded with its counts (never a deleted value) in pmsync.retention_purges.
 */
import pg from 'pg';
import type { Queryable } from '../db/pool.ts';

export interface RetentionDays {
  quarantineDays: number;
  driftDays: number;
  webhookEventDays: number;
  /** Closed history versions; null keeps them for good. */
  historyDays: number | null;
}

export interface PurgeCounts {
  quarantine: number;
  drift: number;
  webhookEvents: number;
  history: number;
}

export interface LastPurge extends PurgeCounts {
  at: Date;
}

/** How many purges are kept for status. */
const KEEP_PURGES = 100;

/** Deletes what is past its retention; `historyTables` are the `<table>_history` tables that exist. */
export async function purgeExpired(db: Queryable, days: RetentionDays, historyTables: string[]): Promise<PurgeCounts> {
  const deleted = async (sql: string, values: unknown[]) => (await db.query(sql, values)).rowCount ?? 0;
  const counts: PurgeCounts = {
    quarantine: await deleted(`DELETE FROM pmsync.quarantine WHERE last_seen_at < now() - make_interval(days => $1)`, [
      days.quarantineDays,
    ]),
    drift: await deleted(`DELETE FROM pmsync.schema_drift WHERE updated_at < now() - make_interval(days => $1)`, [days.driftDays]),
    webhookEvents: await deleted(`DELETE FROM pmsync.webhook_events WHERE last_received_at < now() - make_interval(days => $1)`, [
      days.webhookEventDays,
    ]),
    history: 0,
  };
  if (days.historyDays !== null) {
    for (const table of historyTables) {
      counts.history += await deleted(
        `DELETE FROM "public".${pg.escapeIdentifier(table)} WHERE valid_to IS NOT NULL AND valid_to < now() - make_interval(days => $1)`,
        [days.historyDays],
      );
    }
  }
  if (counts.quarantine + counts.drift + counts.webhookEvents + counts.history > 0) {
    await db.query(`INSERT INTO pmsync.retention_purges (quarantine, drift, webhook_events, history) VALUES ($1, $2, $3, $4)`, [
      counts.quarantine,
      counts.drift,
      counts.webhookEvents,
      counts.history,
    ]);
    await db.query(`DELETE FROM pmsync.retention_purges WHERE id <= (SELECT max(id) - $1 FROM pmsync.retention_purges)`, [KEEP_PURGES]);
  }
  return counts;
}

/** The last purge that removed anything, if any. */
export async function lastPurge(db: Queryable): Promise<LastPurge | null> {
  const res = await db.query<{ purged_at: Date; quarantine: number; drift: number; webhook_events: number; history: number }>(
    'SELECT purged_at, quarantine, drift, webhook_events, history FROM pmsync.retention_purges ORDER BY id DESC LIMIT 1',
  );
  const r = res.rows[0];
  return r ? { at: r.purged_at, quarantine: r.quarantine, drift: r.drift, webhookEvents: r.webhook_events, history: r.history } : null;
}
