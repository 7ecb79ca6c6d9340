/**
 * Runs the retention purge (src/state/retention.ts) with the configured ages,
 * over every history table that exists: after each `pmsync sync` and hourly
 * under `pmsync serve`.
 */
import type { Config } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import { existingRelations } from '../db/access.ts';
import { purgeExpired, type PurgeCounts } from '../state/retention.ts';
import { allResourceTables } from './streams/index.ts';

export async function purgeRetention(pool: Pool, config: Pick<Config, 'retention' | 'webhooks'>): Promise<PurgeCounts> {
  const { tables } = await existingRelations(pool, allResourceTables());
  return purgeExpired(
    pool,
    { ...config.retention, webhookEventDays: config.webhooks.eventRetentionDays },
    tables.filter((t) => t.endsWith('_history')),
  );
}

/** One line for the log, or null when nothing was removed. */
export function describePurge(c: PurgeCounts): string | null {
  if (c.quarantine + c.drift + c.webhookEvents + c.history === 0) return null;
  return `retention: removed ${c.quarantine} quarantined payload(s), ${c.drift} drift finding(s), ${c.webhookEvents} webhook event(s), ${c.history} closed history version(s)`;
}
