import { Command, InvalidArgumentError } from 'commander';
import type { App } from '../../app.ts';
import { type Config, type SourceConfig } from '../../config/schema.ts';
import { EXIT, PmsyncError } from '../../errors.ts';
import { LockedError } from '../../state/locks.ts';
import { loadState } from '../../state/checkpoints.ts';
import { validNames } from '../../strict-schema.ts';
import { zonedToUtc } from '../../time.ts';
import { applyPolicies } from '../../sync/privacy-policies.ts';
import { refreshRecord } from '../../sync/refresh.ts';
import type { RunSummary } from '../../sync/run-scope.ts';
import { resourceNamed, resourceTablesFor, restStreamsFor } from '../../sync/streams/index.ts';
import { syncSource } from '../../sync/sync-source.ts';
import { attachProgress } from '../progress.ts';
import { configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';
import { runStartedAt } from '../../state/runs.ts';
import { countMarkedNotSeenSince } from '../../db/rows.ts';

interface ResyncCliOptions {
  source?: string;
  id?: string;
  since?: string;
  full?: boolean;
  wait?: number;
}

const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/**
 * The instant --since names. A date or date-time without a zone is wall-clock
 * time in the source's time zone (the zone of its ModifiedOn values).
 */
export function parseSince(text: string, timeZone: string): Date {
  const local = LOCAL_DATE_TIME.exec(text.trim());
  if (local) {
    const [, y, mo, d, h = '0', mi = '0', s = '0'] = local;
    const base = zonedToUtc(Number(y), Number(mo), Number(d), Number(h), timeZone);
    const at = new Date(base.getTime() + (Number(mi) * 60 + Number(s)) * 1000);
    if (Number.isNaN(at.getTime()) || Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > 31)
      throw new PmsyncError('USAGE', `--since ${text}: not a valid date`);
    return at;
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text.trim())) return new Date(text.trim());
  throw new PmsyncError(
    'USAGE',
    `--since ${text}: expected YYYY-MM-DD, YYYY-MM-DDThh:mm[:ss] (in the source's time zone) or an ISO instant with Z or an offset`,
  );
}

function seconds(text: string): number {
  if (!/^\d+$/.test(text)) throw new InvalidArgumentError('expected a number of seconds');
  return Number(text);
}

/** Resources a source serves, for matching the argument and for messages. */
function resourcesOf(source: SourceConfig): string[] {
  return resourceTablesFor(source).map((s) => s.resource);
}

/**
 * The Pro API has no modification filter and no single-record endpoint for its
 * lists, so a Pro resync is always a full pass of the resource.
 */
function refuseForPro(source: SourceConfig, resource: string, opts: ResyncCliOptions): void {
  if (source.kind !== 'pro' || opts.full) return;
  const what = opts.id !== undefined ? 'single records by id' : 'changes since a date';
  throw new PmsyncError(
    'USAGE',
    `source "${source.name}" is a Pro source: the Pro API cannot list ${what} for ${resource}; use "pmsync resync ${resource} --source ${source.name} --full"`,
  );
}

function sourcesFor(config: Config, resource: string, name: string | undefined): SourceConfig[] {
  const candidates = findSource(config, name);
  // A table name (gift_certificates, pro_patients) means the resource writing it.
  const having = candidates.filter((s) => resourcesOf(s).includes(resourceNamed(s, resource)));
  if (having.length === 0) {
    const known = [...new Set(candidates.flatMap(resourcesOf))];
    throw new PmsyncError(
      'USAGE',
      `${name ? `source "${name}" has no` : 'no configured source has a'} resource "${resource}"${validNames(resource, known, 'resources')}`,
    );
  }
  return having;
}

function describe(run: RunSummary): string {
  return `${run.status}, ${run.mode}, ${run.pages} page(s), ${run.requests} request(s), ${run.inserted} inserted, ${run.updated} updated, ${run.unchanged} unchanged, ${run.rejected} rejected`;
}

async function markedNotSeen(app: App, source: SourceConfig, resource: string, runId: number): Promise<number | null> {
  const entry = resourceTablesFor(source).find((s) => s.resource === resource);
  // Snapshot tables (Pro availability) keep every capture; nothing in them is "not seen".
  if (!entry || ('kind' in entry && entry.kind === 'pro-snapshot')) return null;
  const started = await runStartedAt(app.pool, runId);
  return started ? countMarkedNotSeenSince(app.pool, entry.table, source.name, started) : 0;
}

/**
 * A since-window ends by moving the stream's cursor to its end, so it must not
 * start after the cursor: changes between the cursor and a later --since would
 * never be read. Such a --since reads from the cursor instead.
 */
async function boundedSince(app: App, source: SourceConfig, resource: string, since: Date): Promise<Date> {
  const stream = restStreamsFor(source).find((s) => s.resource === resource);
  if (!stream || stream.mode === 'full' || (source.kind !== 'pro' && source.fullRefresh.includes(resource))) return since;
  const state = await loadState(app.pool, source.name, resource);
  let bound = state.cursor;
  if (state.window?.mode === 'incremental' && state.window.start) {
    const start = new Date(state.window.start);
    if (!bound || start < bound) bound = start;
  }
  if (!bound) {
    throw new PmsyncError(
      'USAGE',
      `${source.name}/${resource} has not finished its first pass yet, so there is nothing to re-read since a date: run "pmsync sync --source ${source.name} --resource ${resource}" (it resumes the first pass) or "pmsync resync ${resource} --full"`,
    );
  }
  if (since <= bound) return since;
  process.stderr.write(
    `${source.name}/${resource}: the stream has read changes only up to ${bound.toISOString()}; reading from there instead of ${since.toISOString()}\n`,
  );
  return bound;
}

async function resyncWindow(app: App, source: SourceConfig, resource: string, opts: ResyncCliOptions, waitMs: number): Promise<number> {
  let since = opts.since ? parseSince(opts.since, 'timeZone' in source ? source.timeZone : 'UTC') : undefined;
  if (since && since.getTime() > app.ctx.now().getTime()) throw new PmsyncError('USAGE', `--since ${opts.since} is in the future`);
  if (since) since = await boundedSince(app, source, resource, since);
  const result = await syncSource(app.ctx, source, [resource], { since, full: opts.full, purpose: 'resync', lockWaitMs: waitMs });
  if (result.locked?.includes(resource)) throw new LockedError(source.name, resource, waitMs);
  if (result.fatal) throw result.fatal;
  const failure = result.failures.find((f) => f.resource === resource);
  if (failure) throw failure.error;
  const run = result.runs.find((r) => r.resource === resource);
  if (!run) return EXIT.INTERRUPTED;
  let line = `${source.name}/${resource}: ${describe(run)}`;
  if (run.mode === 'full' && run.runId !== null && run.status === 'succeeded') {
    const marked = await markedNotSeen(app, source, resource, run.runId);
    if (marked !== null) line += `; ${marked} row(s) no longer returned by the API marked not_seen_since`;
  }
  process.stdout.write(`${line}\n`);
  return EXIT.OK;
}

export function resyncCommand(): Command {
  return new Command('resync')
    .description('re-read one resource now: one record (--id), everything changed since a date (--since), or all of it (--full)')
    .argument('<resource>', 'resource or table name, e.g. customers or gift_certificates')
    .option('-s, --source <name>', 'only this source (required for --id when several sources have the resource)')
    .option('--id <id>', 'refetch one record by its id, exactly as the API gives it')
    .option('--since <date>', "re-read records modified since DATE (YYYY-MM-DD or date-time, in the source's time zone)")
    .option('--full', 'read the whole resource and mark rows the API no longer returns with not_seen_since (never deleted)')
    .option(
      '--wait <seconds>',
      'how long to wait while a scheduled run of the same stream is going (default serve.lockWaitSeconds, 120)',
      seconds,
    )
    .addHelpText(
      'after',
      `
Resyncs spend the quota reserve kept for webhook refreshes and resyncs (quota.reservePercent).
--since and --full take the same per-stream lock as the scheduler: they are safe while
"pmsync serve" runs and wait for a run in progress (exit 1 with a clear message when it
does not end in time). --since never moves the stream's cursor backwards or skips a change:
a date later than the cursor reads from the cursor. Exit codes as for "pmsync sync".`,
    )
    .action(async (named: string, opts: ResyncCliOptions, cmd: Command) => {
      try {
        const chosen = [opts.id !== undefined, opts.since !== undefined, opts.full === true].filter(Boolean).length;
        if (chosen !== 1) throw new PmsyncError('USAGE', 'give exactly one of --id ID, --since DATE or --full');
        // An empty id would turn the record's URL into the list's: a request spent on the wrong thing.
        if (opts.id !== undefined && opts.id.trim() === '')
          throw new PmsyncError('USAGE', '--id: empty; give the id of one record, e.g. --id 42');
        const config = configFrom(cmd);
        requireSources(config);
        const sources = sourcesFor(config, named, opts.source);
        const resource = resourceNamed(sources[0]!, named);
        for (const source of sources) refuseForPro(source, resource, opts);
        const waitMs = (opts.wait ?? config.serve.lockWaitSeconds) * 1000;
        process.exitCode = await withApp(config, async (app, terminal) => {
          await applyPolicies(app.pool, app.logger, sources);
          if (opts.id !== undefined) {
            if (sources.length > 1)
              throw new PmsyncError(
                'USAGE',
                `several sources have ${resource} (${sources.map((s) => s.name).join(', ')}): add --source NAME`,
              );
            const source = sources[0]!;
            const stream = source.kind === 'pro' ? undefined : restStreamsFor(source).find((s) => s.resource === resource);
            if (!stream || source.kind === 'pro')
              throw new PmsyncError('USAGE', `source "${source.name}" cannot refetch single ${resource} records; use --since or --full`);
            const outcome = await refreshRecord(app.ctx, source, stream, opts.id, 'resync');
            process.stdout.write(
              outcome.status === 'written'
                ? `${source.name}/${resource} ${opts.id}: ${outcome.totals.inserted ? 'inserted' : outcome.totals.updated ? 'updated' : outcome.totals.rejected ? 'rejected (see pmsync.quarantine)' : 'unchanged'}\n`
                : `${source.name}/${resource} ${opts.id}: the API answered 404 (deleted or not visible to this user); the row, if any, is kept and marked not_seen_since\n`,
            );
            return EXIT.OK;
          }
          const detach = attachProgress(app, terminal);
          try {
            let code: number = EXIT.OK;
            for (const source of sources) {
              if (app.ctx.signal.aborted) return EXIT.INTERRUPTED;
              code = Math.max(code, await resyncWindow(app, source, resource, opts, waitMs));
            }
            return code;
          } finally {
            detach();
          }
        });
      } catch (err) {
        fail(err);
      }
    });
}
