/**
 * pmsync's command line. Each command lives in its own file under commands/.
 *
 * Every command module is imported here, so `--help` lists them all; a
 * command's module therefore imports at the top only what defines it and what
 * `sync` needs anyway. A subsystem only some commands run (the serve loop and
 * its metrics, the webhook receiver and worker, the pg-boss queues) is
 * imported with `await import()` inside the code that runs it: a `sync` then
 * never loads it (bench/RESULTS.md, "End to end").
 */
import { Command, Option } from 'commander';
import { EXIT } from '../errors.ts';
import { dbCommand } from './commands/db.ts';
import { dbtCommand } from './commands/dbt.ts';
import { driftCommand } from './commands/drift.ts';
import { grantCommand } from './commands/grant.ts';
import { migrateCommand } from './commands/migrate.ts';
import { repopulateCommand } from './commands/repopulate.ts';
import { resyncCommand } from './commands/resync.ts';
import { runsCommand } from './commands/runs.ts';
import { serveCommand } from './commands/serve.ts';
import { statusCommand } from './commands/status.ts';
import { syncCommand } from './commands/sync.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { setUpProcess } from './process.ts';

setUpProcess();

const program = new Command('pmsync')
  .description('Keeps PostgreSQL in sync with the practice-management Core, Subset and Pro APIs')
  .option('-c, --config <file>', 'JSON config file with several sources (or set PMSYNC_CONFIG)')
  .addOption(
    new Option(
      '--log-format <format>',
      'log lines on stderr: pretty (default on a terminal) or json (default elsewhere; or PMSYNC_LOG_FORMAT)',
    ).choices(['json', 'pretty']),
  )
  .option('-q, --quiet', 'print only problems: errors in the log, no progress, and of a sync only the streams that did not succeed')
  .addCommand(syncCommand())
  .addCommand(serveCommand())
  .addCommand(resyncCommand())
  .addCommand(runsCommand())
  .addCommand(statusCommand())
  .addCommand(driftCommand())
  .addCommand(repopulateCommand())
  .addCommand(grantCommand())
  .addCommand(migrateCommand())
  .addCommand(dbCommand())
  .addCommand(dbtCommand())
  .addCommand(webhooksCommand());

/**
 * Usage errors (unknown command or option, a missing or invalid argument) exit
 * 2 on every command. commander passes neither the exit override nor help
 * after an error on to commands added with addCommand, so both are set on each.
 */
function usageExits(cmd: Command): void {
  cmd.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.OK : EXIT.USAGE));
  cmd.showHelpAfterError();
  for (const sub of cmd.commands) usageExits(sub);
}
usageExits(program);

// Output piped into a reader that stops early (`pmsync status | head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.OK);
  throw err;
});

await program.parseAsync(process.argv);
