/**
 * pmsync.privacy_policies: per source and table, the column policy the
 * stored rows follow (src/privacy/stored.ts), so a changed policy is noticed
 * and handled before anything is written under it.
 *
 * - Stricter (a column hashed, dropped, generalised; raw keeping fewer
 *   fields): what is stored is rewritten in place, history and quarantined
 *   payloads included, with no request to the API (src/db/privacy-rewrite.ts).
 * - Looser (less dropped, another hash key, more kept in raw): the stored
 *   values cannot be recovered from what pmsync holds. The new policy is
 *   taken, the stored rows keep their stricter form, and pmsync says which
 *   records must be read again and what that costs in requests, until a full
 *   pass of the stream has read them again. Only a starting command (`sync`,
 *   `serve`, `resync`, ...) takes a looser policy: a run inside a long-lived
 *   process refuses it, so a replica left on an older configuration never
 *   loosens what another one made stricter.
 *
 * Every page write reads its table's row FOR SHARE and refuses to write under
 * another policy than the stored one; a rewrite holds the row FOR UPDATE, so
 * pages and rewrites of a table never interleave.
 */
import type { Rule } from '../config/privacy.ts';
import { rewriteQuarantine, rewriteRows, type Rewrite } from '../db/privacy-rewrite.ts';
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import type { ColumnType, TableDef } from '../db/table.ts';
import { PmsyncError } from '../errors.ts';
import { treeOf, type RecordPolicy } from '../privacy/record.ts';
import type { PersonalKind } from '../privacy/rules.ts';
import { canonical, OPEN_STORED, policyChange, storedFrom, type PolicyChange, type StoredPolicy } from '../privacy/stored.ts';
import { lastFullPass } from './runs.ts';

/** What a policy change reads of a stream (a stream of src/sync/streams/ is one): its resource and table. */
export interface PolicyStream {
  resource: string;
  table: TableDef;
}

/** What a policy change reads of a source's policy for one table (src/sync/privacy.ts, TablePolicy, is one). */
export interface CompiledPolicy extends RecordPolicy {
  /** Typed columns with a rule other than keep, with the type and personal data of each. */
  columns: Record<string, { rule: Rule; facts: { type: ColumnType; personal?: PersonalKind } }>;
  /** What pmsync.privacy_policies keeps of it. */
  stored: StoredPolicy;
}

/** A looser change still waiting for its records to be read again. */
export interface ResyncNeeded {
  /** When the looser policy was taken (database clock). */
  since: string;
  /** What changed, in words. */
  changes: string[];
}

export interface PolicyOutcome {
  /** Rows, history versions and quarantined payloads rewritten for a stricter policy. */
  rewritten: { rows: number; versions: number; quarantined: number } | null;
  /** What a looser policy taken now changed; empty when none was. */
  looser: string[];
  /** Still waiting for a full pass (from this change or an earlier one). */
  resyncNeeded: ResyncNeeded | null;
  /** A full pass has read the records again since the last looser change. */
  resolved: boolean;
}

interface PolicyRow {
  policy: unknown;
  resync_needed: ResyncNeeded | null;
}

/**
 * Refuses to write a page under another policy than the stored one (the
 * table's row is read FOR SHARE, held until the page commits). A table
 * without a stored policy holds what pmsync wrote before policies existed.
 */
export async function assertPolicy(tx: Queryable, source: string, table: string, expected: StoredPolicy): Promise<void> {
  const res = await tx.query<{ policy: unknown }>(
    'SELECT policy FROM pmsync.privacy_policies WHERE source = $1 AND table_name = $2 FOR SHARE',
    [source, table],
  );
  const stored = res.rows[0] ? storedFrom(res.rows[0].policy) : OPEN_STORED;
  if (canonical(stored) === canonical(expected)) return;
  throw new PmsyncError(
    'CONFIG_INVALID',
    `the privacy policy stored for ${table} of source "${source}" is not the one this process writes with (another pmsync process applied a newer configuration, or this one changed it): nothing was written; the next run applies the configuration in force`,
  );
}

export type EnsureMode = 'start' | 'run';

/**
 * Brings the stored data of one table in line with the configured policy (see
 * the file header). `start`: a command starting takes a looser policy too;
 * `run`: a looser one is refused with an error that says to restart.
 */
export async function ensurePolicy(
  pool: Pool,
  source: string,
  stream: PolicyStream,
  policy: CompiledPolicy,
  mode: EnsureMode,
): Promise<PolicyOutcome> {
  const table = stream.table.name;
  // The common case, one read: the stored policy is the configured one and nothing waits for a full pass.
  const seen = await pool.query<PolicyRow>(
    'SELECT policy, resync_needed FROM pmsync.privacy_policies WHERE source = $1 AND table_name = $2',
    [source, table],
  );
  const known = seen.rows[0];
  if (known && known.resync_needed === null && canonical(storedFrom(known.policy)) === canonical(policy.stored))
    return { rewritten: null, looser: [], resyncNeeded: null, resolved: false };
  return withTransaction(pool, async (tx) => {
    await tx.query(
      'INSERT INTO pmsync.privacy_policies (source, table_name, policy) VALUES ($1, $2, $3::jsonb) ON CONFLICT (source, table_name) DO NOTHING',
      [source, table, JSON.stringify(OPEN_STORED)],
    );
    const res = await tx.query<PolicyRow>(
      'SELECT policy, resync_needed FROM pmsync.privacy_policies WHERE source = $1 AND table_name = $2 FOR UPDATE',
      [source, table],
    );
    const row = res.rows[0]!;
    const before = storedFrom(row.policy);
    const outcome: PolicyOutcome = { rewritten: null, looser: [], resyncNeeded: row.resync_needed, resolved: false };
    if (row.resync_needed) {
      const full = await lastFullPass(tx, source, stream.resource);
      if (full && full > new Date(row.resync_needed.since)) {
        outcome.resyncNeeded = null;
        outcome.resolved = true;
      }
    }
    if (canonical(before) !== canonical(policy.stored)) {
      const change = policyChange(before, policy.stored, table);
      if (change.looser.length > 0 && mode === 'run') {
        throw new PmsyncError(
          'CONFIG_INVALID',
          `the privacy policy configured for ${table} of source "${source}" is looser than the stored one (${change.looser.join('; ')}): a running process does not loosen a policy; restart pmsync to take it`,
        );
      }
      outcome.rewritten = await rewriteStored(tx, source, stream, policy, change);
      if (change.looser.length > 0) {
        outcome.looser = change.looser;
        const now = (await tx.query<{ now: Date }>('SELECT now()')).rows[0]!.now.toISOString();
        outcome.resyncNeeded = { since: now, changes: [...(outcome.resyncNeeded?.changes ?? []), ...change.looser] };
      }
    }
    if (outcome.rewritten || outcome.looser.length > 0 || outcome.resolved) {
      await tx.query(
        `UPDATE pmsync.privacy_policies SET policy = $3::jsonb, key_fingerprint = $4, resync_needed = $5::jsonb, updated_at = now()
         WHERE source = $1 AND table_name = $2`,
        [
          source,
          table,
          JSON.stringify(policy.stored),
          policy.stored.key,
          outcome.resyncNeeded ? JSON.stringify(outcome.resyncNeeded) : null,
        ],
      );
    }
    return outcome;
  });
}

/** The stricter part of a change, applied to the table, its history and its quarantined payloads. */
async function rewriteStored(
  tx: Queryable,
  source: string,
  stream: PolicyStream,
  policy: CompiledPolicy,
  change: PolicyChange,
): Promise<PolicyOutcome['rewritten']> {
  const { columns, paths, prune } = change.rewrite;
  if (columns.length === 0 && paths.length === 0 && prune === null) return null;
  const wanted = new Set(paths);
  const rw: Rewrite = {
    record: { paths: policy.paths.filter((p) => wanted.has(p.path.join('.'))), declared: prune ? treeOf(prune) : null, key: policy.key },
    columns: columns.map((c) => {
      const { rule, facts } = policy.columns[c]!;
      return { column: c, rule, type: facts.type, normalise: facts.personal ?? 'text' };
    }),
  };
  return {
    rows: await rewriteRows(tx, stream.table, source, rw, false),
    versions: await rewriteRows(tx, stream.table, source, rw, true),
    quarantined: await rewriteQuarantine(tx, source, stream.resource, rw.record),
  };
}

/** The stored policies of some sources, as canonical text, and whether each waits for a full pass. */
export async function storedPolicies(db: Queryable, sources: string[]): Promise<Map<string, { policy: string; waiting: boolean }>> {
  const res = await db.query<{ source: string; table_name: string; policy: unknown; waiting: boolean }>(
    'SELECT source, table_name, policy, resync_needed IS NOT NULL AS waiting FROM pmsync.privacy_policies WHERE source = ANY($1::text[])',
    [sources],
  );
  return new Map(res.rows.map((r) => [`${r.source}/${r.table_name}`, { policy: canonical(storedFrom(r.policy)), waiting: r.waiting }]));
}

/** Records, in one statement, that these tables follow the open policy (what pmsync wrote before policies existed). */
export async function recordOpenPolicies(db: Queryable, tables: Array<{ source: string; table: string }>): Promise<void> {
  if (tables.length === 0) return;
  await db.query(
    `INSERT INTO pmsync.privacy_policies (source, table_name, policy)
     SELECT s, t, $3::jsonb FROM unnest($1::text[], $2::text[]) AS x(s, t) ON CONFLICT (source, table_name) DO NOTHING`,
    [tables.map((t) => t.source), tables.map((t) => t.table), JSON.stringify(OPEN_STORED)],
  );
}

/** The looser changes still waiting for a full pass, per source and table (for status). */
export async function pendingResyncs(db: Queryable): Promise<Array<{ source: string; table: string; needed: ResyncNeeded }>> {
  const res = await db.query<{ source: string; table_name: string; resync_needed: ResyncNeeded }>(
    'SELECT source, table_name, resync_needed FROM pmsync.privacy_policies WHERE resync_needed IS NOT NULL ORDER BY source, table_name',
  );
  return res.rows.map((r) => ({ source: r.source, table: r.table_name, needed: r.resync_needed }));
}
