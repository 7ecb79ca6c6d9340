/**
 * Taking a source's column policies before anything is written under them
 * (src/state/privacy-policies.ts does the storing and rewriting): at the
 * start of a command for every table of every source, and before each run
 * and each single-record refresh for its table. Says in the log what a
 * stricter policy rewrote, and, for a looser one, which records must be read
 * again and what that costs in requests.
 */
import type { SourceConfig } from '../config/schema.ts';
import type { Pool, Queryable } from '../db/pool.ts';
import { PmsyncError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { canonical, OPEN_STORED } from '../privacy/stored.ts';
import { ensurePolicy, recordOpenPolicies, storedPolicies, type EnsureMode, type ResyncNeeded } from '../state/privacy-policies.ts';
import { OPEN_TABLE_POLICY } from './privacy.ts';
import type { RestStream } from './streams/rest.ts';
import type { ProFanOutStream, ProListStream } from './streams/pro/stream.ts';
import { settingsFor, tableStreams, type TableSettings } from './table-settings.ts';
import type { StreamBase } from './types.ts';

/** Rows a Core or Subset list page holds at most (the Rows maximum). */
const REST_PAGE_ROWS = 100;

type TableStream = RestStream | ProListStream | ProFanOutStream;

/** Whether every run reads the stream whole, so its next run reads every record again anyway. */
function readWhole(source: SourceConfig, stream: TableStream): boolean {
  if (stream.kind === 'rest') return stream.mode === 'full' || (source.kind !== 'pro' && source.fullRefresh.includes(stream.resource));
  return stream.kind === 'pro-list' || !stream.incremental;
}

/**
 * What reading a stream's records again costs: a list page per 100 stored
 * rows (per the source's page limit for Pro lists), one request per key for
 * a Pro fan-out (one per patient, one per waitlist entry).
 */
export async function readAgainCost(db: Queryable, source: SourceConfig, stream: StreamBase): Promise<{ requests: number; rows: number }> {
  const s = stream as TableStream;
  const res = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${s.table.name}" WHERE source = $1 AND not_seen_since IS NULL`,
    [source.name],
  );
  const rows = res.rows[0]?.n ?? 0;
  if (s.kind === 'pro-fan-out' && source.kind === 'pro') {
    const keys = await s.keys(db, { source, changedOnly: false, changedSince: null, after: 0, limit: 1_000_000 });
    return { requests: keys.length, rows };
  }
  const perPage = s.kind === 'pro-list' && source.kind === 'pro' ? source.pageLimit : REST_PAGE_ROWS;
  return { requests: Math.max(1, Math.ceil(rows / perPage)), rows };
}

/** What to do about a looser policy, in one sentence an operator can act on. */
export async function readAgainAdvice(db: Queryable, source: SourceConfig, stream: StreamBase): Promise<string> {
  const { requests, rows } = await readAgainCost(db, source, stream);
  const cost = `about ${requests} request${requests === 1 ? '' : 's'} for ${rows} stored row${rows === 1 ? '' : 's'}`;
  if (readWhole(source, stream as TableStream))
    return `${stream.resource} is read whole on every run: its next run reads them again (${cost})`;
  return `read them again with "pmsync resync ${stream.resource} --source ${source.name} --full" (${cost})`;
}

function looserMessage(source: string, table: string, needed: ResyncNeeded, advice: string): string {
  return (
    `source "${source}": the privacy policy of ${table} is looser than the one its stored rows follow (${needed.changes.join('; ')}). ` +
    `Stored rows keep the stricter form until their records are read again; new and changed records follow the new policy. ${advice}`
  );
}

/** Takes the source's policy for one table (see src/state/privacy-policies.ts for `mode`), logging what it did. */
export async function applyPolicy(
  pool: Pool,
  logger: Logger,
  source: SourceConfig,
  stream: StreamBase,
  settings: TableSettings,
  mode: EnsureMode,
): Promise<void> {
  const table = stream.table.name;
  const outcome = await ensurePolicy(pool, source.name, stream, settings.privacy ?? OPEN_TABLE_POLICY, mode);
  if (outcome.rewritten) {
    logger.info(
      { source: source.name, table, ...outcome.rewritten },
      `a stricter privacy policy was applied to what is stored of ${table}, its history and its quarantined records, without reading them again`,
    );
  }
  if (outcome.resolved)
    logger.info({ source: source.name, table }, `the records of ${table} were read again since its privacy policy was loosened`);
  // Said when a looser policy is taken, and again by every command that starts while its records are not read again.
  if (outcome.resyncNeeded && (outcome.looser.length > 0 || mode === 'start')) {
    const advice = await readAgainAdvice(pool, source, stream);
    logger.warn(
      { source: source.name, table, changes: outcome.resyncNeeded.changes, since: outcome.resyncNeeded.since },
      looserMessage(source.name, table, outcome.resyncNeeded, advice),
    );
  }
}

/**
 * Every table of every given source: at the start of a command that writes
 * records, and when a running `serve` takes a changed configuration (`run`:
 * a looser policy is then logged as refused, and that table's runs refuse it
 * until a restart).
 */
export async function applyPolicies(pool: Pool, logger: Logger, sources: SourceConfig[], mode: EnsureMode = 'start'): Promise<void> {
  // One read for every table: a fleet's start touches only the tables whose policy changed (or waits for a full pass).
  const stored = await storedPolicies(
    pool,
    sources.map((s) => s.name),
  );
  const open = canonical(OPEN_STORED);
  const unrecorded: Array<{ source: string; table: string }> = [];
  for (const source of sources) {
    for (const stream of tableStreams(source)) {
      const settings = settingsFor(source, stream);
      const wanted = canonical(settings.privacy?.stored ?? OPEN_STORED);
      const have = stored.get(`${source.name}/${stream.table.name}`);
      if (have && have.policy === wanted && !have.waiting) continue;
      if (!have && wanted === open) {
        unrecorded.push({ source: source.name, table: stream.table.name });
        continue;
      }
      try {
        await applyPolicy(pool, logger, source, stream, settings, mode);
      } catch (err) {
        if (mode === 'start' || !(err instanceof PmsyncError) || err.code !== 'CONFIG_INVALID') throw err;
        logger.warn({ source: source.name, table: stream.table.name }, err.message);
      }
    }
  }
  // Recorded so a stricter policy another process takes later is serialised with this one's pages (see assertPolicy).
  await recordOpenPolicies(pool, unrecorded);
}
