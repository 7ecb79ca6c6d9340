/**
 * What the text of `pmsync status` says besides the sources: the retention in
 * force and what its last purge removed, the tables whose records wait to be
 * read again under a looser privacy policy, and, with no source configured,
 * the sources the database holds data of.
 */
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import { pendingResyncs } from '../state/privacy-policies.ts';
import { lastPurge, type LastPurge } from '../state/retention.ts';
import { lastFullPass } from '../state/runs.ts';
import { storedSources, type StoredSource } from '../state/sources.ts';
import { readAgainAdvice } from '../sync/privacy-policies.ts';
import { tableStreams } from '../sync/table-settings.ts';

/** The retention in force (src/state/retention.ts) and what its last purge removed. */
export interface RetentionStatus {
  quarantineDays: number;
  driftDays: number;
  webhookEventDays: number;
  /** Null: closed history versions are kept for good. */
  historyDays: number | null;
  lastPurge: LastPurge | null;
}

export async function retentionStatus(app: App, config: Config): Promise<RetentionStatus> {
  const r = config.retention;
  return {
    quarantineDays: r.quarantineDays,
    driftDays: r.driftDays,
    webhookEventDays: config.webhooks.eventRetentionDays,
    historyDays: r.historyDays,
    lastPurge: await lastPurge(app.pool),
  };
}

/** A table whose column policy was loosened and whose records are not read again yet (src/state/privacy-policies.ts). */
export interface PrivacyResync {
  source: string;
  table: string;
  /** When the looser policy was taken. */
  since: string;
  /** What changed, in words. */
  changes: string[];
  /** How its records are read again, and what that costs. */
  advice: string;
}

export async function privacyResyncs(app: App, config: Config): Promise<PrivacyResync[]> {
  const out: PrivacyResync[] = [];
  for (const p of await pendingResyncs(app.pool)) {
    const source = config.sources.find((s) => s.name === p.source);
    const stream = source && tableStreams(source).find((s) => s.table.name === p.table);
    if (!source || !stream) continue;
    // A full pass since the change read them again (the next command that writes clears the note).
    const full = await lastFullPass(app.pool, p.source, stream.resource);
    if (full && full > new Date(p.needed.since)) continue;
    out.push({
      source: p.source,
      table: p.table,
      since: p.needed.since,
      changes: p.needed.changes,
      advice: await readAgainAdvice(app.pool, source, stream),
    });
  }
  return out;
}

/** The sources the database holds data of, for a status with none configured. */
export function heldSources(app: App): Promise<StoredSource[]> {
  return storedSources(app.pool);
}
