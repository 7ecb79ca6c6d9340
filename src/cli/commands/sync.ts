import { Command } from 'commander';
import { findSource } from '../../config.ts';
import { type Config } from '../../config-schema.ts';
import { EXIT, exitCodeFor, PmsyncError } from '../../errors.ts';
import { syncSource, type SourceResult } from '../../sync/sync-source.ts';
import { unknownResources } from '../../sync/streams/index.ts';
import { attachProgress } from '../progress.ts';
import { configFrom, fail, requireSources, withApp } from '../shared.ts';
import type { App } from '../../app.ts';

export interface SyncCliOptions {
  source?: string;
  resource?: string[];
}

/** Runs every selected source; returns the results and the process exit code. */
export async function runSync(app: App, config: Config, opts: SyncCliOptions): Promise<{ results: SourceResult[]; exitCode: number }> {
  const sources = findSource(config, opts.source);
  const results: SourceResult[] = [];
  let exitCode: number = EXIT.OK;
  for (const source of sources) {
    if (app.ctx.signal.aborted) break;
    const result = await syncSource(app.ctx, source, opts.resource);
    results.push(result);
    if (result.fatal) exitCode = Math.max(exitCode, exitCodeFor(result.fatal));
    else if (result.failures.length > 0) exitCode = Math.max(exitCode, EXIT.PARTIAL);
    // Every source writes to the same database: the next ones would only fail the same way.
    if (result.fatal instanceof PmsyncError && result.fatal.code === 'DB_UNREACHABLE') break;
  }
  if (app.ctx.signal.aborted) exitCode = EXIT.INTERRUPTED;
  return { results, exitCode };
}

/** --source and --resource name things that exist: refused (exit 2, every name at once) before the database is opened or migrated. */
function checkSelection(config: Config, opts: SyncCliOptions): void {
  const problems = findSource(config, opts.source).flatMap((source) => unknownResources(source, opts.resource ?? []));
  if (problems.length > 0) throw new PmsyncError('USAGE', problems.join('\n'));
}

/** One line per stream run, to stdout; with `quiet`, only the runs that did not succeed. */
export function printResults(results: SourceResult[], options: { quiet?: boolean } = {}): void {
  for (const r of results) {
    for (const run of r.runs) {
      if (options.quiet && (run.status === 'succeeded' || run.status === 'skipped')) continue;
      process.stdout.write(
        `${r.source}/${run.resource}: ${run.status}, ${run.mode}, ${run.pages} page(s), ${run.requests} request(s), ` +
          `${run.inserted} inserted, ${run.updated} updated, ${run.unchanged} unchanged, ${run.rejected} rejected\n`,
      );
    }
    for (const f of r.failures) process.stdout.write(`${r.source}/${f.resource}: failed: ${f.error.message}\n`);
    if (r.fatal) process.stdout.write(`${r.source}: stopped: ${r.fatal.message}\n`);
  }
}

export function syncCommand(): Command {
  return new Command('sync')
    .description('read every configured resource incrementally into PostgreSQL (migrates first when needed)')
    .option('-s, --source <name>', 'only this source')
    .option('-r, --resource <names...>', 'only these resources (e.g. customers orders)')
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 failed, 2 usage, 3 bad configuration, 4 credentials refused (401),
5 daily quota exhausted (resumes after the reset), 6 API or database unreachable,
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
            const { results, exitCode } = await runSync(app, config, opts);
            detach();
            printResults(results, { quiet: config.quiet });
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
