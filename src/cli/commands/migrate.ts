import { Command } from 'commander';
import { configFrom, fail, withApp } from '../shared.ts';
import { migrate } from '../../db/migrate.ts';
import { reapplyGrants } from '../../app.ts';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('apply pending database migrations (works offline; records them in _prisma_migrations)')
    .action(async (_opts, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        await withApp(
          config,
          async (app) => {
            const result = await migrate(app.pool);
            if (result.applied.length > 0) await reapplyGrants(app.pool);
            process.stdout.write(
              result.applied.length > 0
                ? `Applied ${result.applied.length} migration(s): ${result.applied.join(', ')}\n`
                : `Database is up to date (${result.alreadyApplied} migration(s) applied).\n`,
            );
          },
          { migrate: false },
        );
      } catch (err) {
        fail(err);
      }
    });
}
