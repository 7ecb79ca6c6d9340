import { Command } from 'commander';
import { type Config, type SourceConfig } from '../../config/schema.ts';
import { EXIT, exitCodeFor, PmsyncError, QuotaExhaustedError } from '../../errors.ts';
import { boundWarning, readBound, readStalls, type Stall } from '../../sync/coverage.ts';
import { applyPolicies } from '../../sync/privacy-policies.ts';
import { describePurge, purgeRetention } from '../../sync/retention.ts';
import { syncSource, type SourceResult } from '../../sync/sync-source.ts';
import { selectProStreams, selectRestStreams, unknownResources } from '../../sync/streams/index.ts';
import { attachProgress } from '../progress.ts';
import { configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';
import type { App } from '../../app.ts';

export interface SyncCliOptions {
  source?: string;
  resource?: string[];
}

export interface SyncOutcome {
  results: SourceResult[];
  /** Per source, the streams that stalled (see src/sync/coverage.ts). */
  stalls: Map<string, Stall[]>;
  exitCode: number;
}

/**
 * Runs every selected source; returns the results and the process exit code.
 *
 * A run that ends because the day's budget or allowance is spent is healthy:
 * the next run (on the next quota day for a backfill) goes on from the
 * checkpoint. It exits non-zero only for failures, and with EXIT.QUOTA when
 * a stream stalled: no progress for a whole quota day while work remained, or
 * not checked within the bound the budget allows.
 */
export async function runSync(app: App, config: Config, opts: SyncCliOptions): Promise<SyncOutcome> {
  const sources = findSource(config, opts.source);
  // Before any record is written: stored data follows a stricter column policy, a looser one is said.
  await applyPolicies(app.pool, app.logger, sources);
  // What the pmsync_freshness view says of each stream's target.
  const { recordStreamTargets } = await import('../../scheduler/targets.ts');
  await recordStreamTargets(app.pool, config);
  const results: SourceResult[] = [];
  const stalls = new Map<string, Stall[]>();
  let exitCode: number = EXIT.OK;
  for (const source of sources) {
    if (app.ctx.signal.aborted) break;
    const resources = selectedResources(source, opts.resource);
    const bound = await readBound(app.ctx, source.name, resources, source.budget);
    const warning = boundWarning(source.name, bound);
    if (warning) app.logger.warn({ source: source.name, budget: bound.budget, needed: bound.needed, boundDays: bound.days }, warning);
    const result = await syncSource(app.ctx, source, opts.resource);
    results.push(result);
    const quotaStop = result.fatal instanceof QuotaExhaustedError;
    if (result.fatal && !quotaStop) exitCode = Math.max(exitCode, exitCodeFor(result.fatal));
    else if (result.failures.length > 0) exitCode = Math.max(exitCode, EXIT.PARTIAL);
    // Every source writes to the same database: the next ones would only fail the same way.
    if (result.fatal instanceof PmsyncError && result.fatal.code === 'DB_UNREACHABLE') break;
    if (result.fatal && !quotaStop) continue;
    const locked = new Set(result.locked ?? []);
    const backfillPages = result.runs.filter((r) => r.purpose === 'backfill').reduce((n, r) => n + r.pages, 0);
    const found = await readStalls(
      app.ctx,
      source.name,
      resources.filter((r) => !locked.has(r)),
      bound,
      app.ledgerFor(source),
      backfillPages,
    );
    if (found.length > 0) {
      stalls.set(source.name, found);
      exitCode = Math.max(exitCode, EXIT.QUOTA);
    }
  }
  if (app.ctx.signal.aborted) exitCode = EXIT.INTERRUPTED;
  return { results, stalls, exitCode };
}

/** The resources a sync of `source` reads: those named, else every configured stream. */
function selectedResources(source: SourceConfig, resources: string[] | undefined): string[] {
  return (source.kind === 'pro' ? selectProStreams(source, resources) : selectRestStreams(source, resources)).map((s) => s.resource);
}

/** --source and --resource name things that exist: refused (exit 2, every name at once) before the database is opened or migrated. */
function checkSelection(config: Config, opts: SyncCliOptions): void {
  const problems = findSource(config, opts.source).flatMap((source) => unknownResources(source, opts.resource ?? []));
  if (problems.length > 0) throw new PmsyncError('USAGE', problems.join('\n'));
}

/** Deletes what is past its retention; a failed purge is logged, never failing the sync it follows. */
async function purgeAfterSync(app: App, config: Config): Promise<void> {
  try {
    const counts = await purgeRetention(app.pool, config);
    const line = describePurge(counts);
    if (line) app.logger.info({ ...counts }, line);
  } catch (err) {
    app.logger.warn({ err }, 'the retention purge failed; it is tried again after the next sync');
  }
}

/** One line per stream run, to stdout; with `quiet`, only the runs that did not succeed. */
export function printResults(results: SourceResult[], options: { quiet?: boolean; stalls?: Map<string, Stall[]> } = {}): void {
  for (const r of results) {
    for (const run of r.runs) {
      if (options.quiet && (run.status === 'succeeded' || run.status === 'skipped')) continue;
      process.stdout.write(
        `${r.source}/${run.resource}: ${run.status}, ${run.mode}, ${run.pages} page(s), ${run.requests} request(s), ` +
          `${run.inserted} inserted, ${run.updated} updated, ${run.unchanged} unchanged, ${run.rejected} rejected\n`,
      );
    }
    for (const f of r.failures) process.stdout.write(`${r.source}/${f.resource}: failed: ${f.error.message}\n`);
    if (r.deferred?.length && !options.quiet) {
      process.stdout.write(
        `${r.source}: checks deferred to the next run (the day's scheduled-spend budget is spent; the stalest go first): ${r.deferred.join(', ')}\n`,
      );
    }
    // A quota stop is planned (the next run resumes): a problem only when something stalled, which says so.
    if (r.fatal && !(options.quiet && r.fatal instanceof QuotaExhaustedError))
      process.stdout.write(`${r.source}: stopped: ${r.fatal.message}\n`);
    for (const stall of options.stalls?.get(r.source) ?? [])
      process.stdout.write(`${r.source}/${stall.resource}: stalled: ${stall.reason}\n`);
  }
}

export function syncCommand(): Command {
  return new Command('sync')
    .description('read every configured resource incrementally into PostgreSQL (migrates first when needed)')
    .option('-s, --source <name>', 'only this source')
    .option(
      '-r, --resource <names...>',
      'only these resources, by resource or table name (e.g. customers giftcertificates or gift_certificates)',
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 ok (also when the day's budget or allowance ran out as planned: the next run
goes on from the checkpoint), 1 failed, 2 usage, 3 bad configuration, 4 credentials refused (401),
5 a stream stalled: no progress for a whole quota day while work remained, or not checked
within the bound the budget allows (a line names it), 6 API or database unreachable,
7 some resources failed, 130 stopped by SIGINT/SIGTERM (checkpoint saved).`,
    )
    .action(async (opts: SyncCliOptions, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        requireSources(config);
        checkSelection(config, opts);
        const code = await withApp(config, async (app, terminal) => {
          const detach = attachProgress(app, terminal);
          try {
            const { results, stalls, exitCode } = await runSync(app, config, opts);
            detach();
            await purgeAfterSync(app, config);
            printResults(results, { quiet: config.quiet, stalls });
            return exitCode;
          } finally {
            detach();
          }
        });
        process.exitCode = code;
      } catch (err) {
        if (err instanceof PmsyncError || err instanceof Error) fail(err);
        throw err;
      }
    });
}
