/**
 * pmsync's command line. Each command lives in its own file under commands/.
 */
import { Command } from 'commander';
import { dbCommand } from './commands/db.ts';
import { demoCommand } from './commands/demo.ts';
import { migrateCommand } from './commands/migrate.ts';
import { resyncCommand } from './commands/resync.ts';
import { runsCommand } from './commands/runs.ts';
import { serveCommand } from './commands/serve.ts';
import { simulateCommand } from './commands/simulate.ts';
import { statusCommand } from './commands/status.ts';
import { syncCommand } from './commands/sync.ts';
import { webhooksCommand } from './commands/webhooks.ts';

const program = new Command('pmsync')
  .description('Keeps PostgreSQL in sync with the practice-management Core, Subset and Pro APIs')
  .option('-c, --config <file>', 'JSON config file with several sources (or set PMSYNC_CONFIG)')
  .showHelpAfterError()
  .addCommand(syncCommand())
  .addCommand(serveCommand())
  .addCommand(resyncCommand())
  .addCommand(runsCommand())
  .addCommand(statusCommand())
  .addCommand(migrateCommand())
  .addCommand(demoCommand())
  .addCommand(simulateCommand())
  .addCommand(dbCommand())
  .addCommand(webhooksCommand());

program.exitOverride((err) => {
  process.exit(err.exitCode === 0 ? 0 : 2);
});

await program.parseAsync(process.argv);
