/**
 * pmsync.source_changes: which sources' scheduling inputs changed, and in what
 * order. Triggers on the tables the scheduler decides from bump the written
 * rows' scope to the next number of one sequence, so every writer in every
 * process is seen without any of them having to remember to say so: a
 * stream's runs, checkpoint, schedule row and notifications its
 * `stream:<source>/<resource>` (a row with no resource its source's own
 * scope, the source's name: read it whole); a source's health and webhook
 * registrations `health:<source>`; a gateway key's quota ledger
 * `key:<fingerprint>`; a stream's change model `model:<source>/<resource>`.
 * The migrations 20261127000002_source_changes and
 * 20261128000001_stream_scopes hold the triggers.
 *
 * A sequence number is taken when a row is written, not when its transaction
 * commits, so a transaction that took number 10 may commit after one that
 * took 11. A reader therefore asks again from an older number than the latest
 * it saw (CHANGE_OVERLAP_POLLS polls back), and keeps per scope the version it
 * last acted on, so a change seen twice is acted on once.
 */
import type { Queryable } from '../db/pool.ts';

/** The scope of a gateway key's quota ledger rows. */
export function keyScope(keyId: string): string {
  return `key:${keyId}`;
}

/**
 * The stream a `stream:<source>/<resource>` scope names (its runs, checkpoint, schedule row and notifications,
 * written by the triggers of 20261128000001_stream_scopes); null for any other scope. Resources never hold a slash;
 * sources may.
 */
export function streamOfScope(scope: string): { source: string; resource: string } | null {
  if (!scope.startsWith('stream:')) return null;
  const slash = scope.lastIndexOf('/');
  if (slash <= 'stream:'.length) return null;
  return { source: scope.slice('stream:'.length, slash), resource: scope.slice(slash + 1) };
}

/** The scope of a source's health and webhook registrations. */
export function healthScope(source: string): string {
  return `health:${source}`;
}

/** The scope of a stream's change model rows. */
export function modelScope(source: string, resource: string): string {
  return `model:${source}/${resource}`;
}

export interface ChangedScope {
  scope: string;
  version: number;
}

/** The scopes whose version is above `after`, and the highest version in the table (0 when empty). */
export async function changedScopes(db: Queryable, after: number): Promise<{ latest: number; changed: ChangedScope[] }> {
  const res = await db.query<{ scope: string | null; version: number | null; latest: number | null }>(
    `SELECT c.scope, c.version, (SELECT max(version) FROM pmsync.source_changes) AS latest
     FROM (SELECT 1) AS one LEFT JOIN pmsync.source_changes c ON c.version > $1`,
    [after],
  );
  const latest = res.rows[0]?.latest ?? 0;
  return {
    latest,
    changed: res.rows
      .filter((r): r is { scope: string; version: number; latest: number } => r.scope !== null)
      .map((r) => ({ scope: r.scope, version: r.version })),
  };
}

/** How many polls back a reader asks again, for changes whose transactions committed out of number order. */
export const CHANGE_OVERLAP_POLLS = 2;

/**
 * What a reader of pmsync.source_changes remembers between polls: the latest
 * versions of its last polls (it asks from the oldest), and per scope the
 * version it last acted on.
 */
export class ChangeReader {
  private readonly marks: number[] = [];
  private readonly acted = new Map<string, number>();

  /** The scopes changed since this reader last acted on them. The first poll reports nothing: everything is read then. */
  async poll(db: Queryable): Promise<Set<string>> {
    const first = this.marks.length === 0;
    const { latest, changed } = await changedScopes(db, first ? Number.MAX_SAFE_INTEGER : this.marks[0]!);
    this.marks.push(latest);
    if (this.marks.length > CHANGE_OVERLAP_POLLS) this.marks.shift();
    const out = new Set<string>();
    for (const c of changed) {
      if ((this.acted.get(c.scope) ?? 0) >= c.version) continue;
      this.acted.set(c.scope, c.version);
      out.add(c.scope);
    }
    return out;
  }
}
