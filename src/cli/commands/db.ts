import { Command } from 'commander';
import { loadConfig } from '../../config.ts';
import { startEmbedded } from '../../db/embedded.ts';
import { fail } from '../shared.ts';

/** Keeps the embedded PostgreSQL running so analysts can connect to it with psql or any SQL tool. */
export function dbCommand(): Command {
  return new Command('db')
    .description('run the embedded PostgreSQL in the foreground and print its connection string (Ctrl-C stops it)')
    .option('--port <port>', 'port to listen on', (v) => Number(v))
    .action(async (opts: { port?: number }) => {
      try {
        const config = loadConfig();
        if (config.databaseUrl) {
          process.stdout.write('DATABASE_URL is set: pmsync uses that database, not the embedded one.\n');
          return;
        }
        const db = await startEmbedded({ dataDir: config.dataDir, port: opts.port });
        process.stdout.write(`Embedded PostgreSQL is running. Connect with:\n  psql ${db.connectionString}\nPress Ctrl-C to stop.\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await db.stop();
      } catch (err) {
        fail(err);
      }
    });
}
