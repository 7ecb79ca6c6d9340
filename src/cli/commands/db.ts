import pg from 'pg';
import { Command, InvalidArgumentError } from 'commander';
import { loadConfig } from '../../config/load.ts';
import { EMBEDDED_DEFAULT_PORT, startEmbedded, type EmbeddedDatabase } from '../../db/embedded.ts';
import { EXIT } from '../../errors.ts';
import { STREAM_REGISTRY } from '../../sync/stream-registry.ts';
import { fail } from '../shared.ts';

/** How often `db` checks that its server still runs and whether it must take it over. */
const WATCH_MS = 1_000;

/**
 * Keeps the embedded PostgreSQL running so analysts can connect to it with
 * psql or any SQL tool. When another pmsync process already runs it, `db`
 * borrows it and holds a connection, so that process leaves it running when it
 * ends; `db` then adopts it and stops it on Ctrl-C.
 */
export function dbCommand(): Command {
  return new Command('db')
    .description('run the embedded PostgreSQL in the foreground and print its connection string (Ctrl-C stops it)')
    .option(
      '--port <port>',
      `port to listen on (default ${EMBEDDED_DEFAULT_PORT}, or a free one when it is taken; 0: any free port)`,
      (v) => {
        if (!/^\d+$/.test(v) || Number(v) > 65_535) throw new InvalidArgumentError('expected a port number');
        return Number(v);
      },
    )
    .action(async (opts: { port?: number }) => {
      try {
        const config = loadConfig(STREAM_REGISTRY);
        if (config.databaseUrl) {
          process.stdout.write('DATABASE_URL is set: pmsync uses that database, not the embedded one.\n');
          return;
        }
        const db = await startEmbedded({ dataDir: config.dataDir, port: opts.port });
        process.stdout.write(describeStart(db, opts.port));
        const code = await watch(db);
        process.exitCode = code;
      } catch (err) {
        fail(err);
      }
    });
}

function describeStart(db: EmbeddedDatabase, asked: number | undefined): string {
  const lines: string[] = [];
  const owner = db.owner();
  if (!db.owned && owner !== null) {
    lines.push(
      `The embedded PostgreSQL is already running, started by pmsync process ${owner}; this one keeps it running after that process ends.`,
    );
    if (asked !== undefined && asked !== db.port) lines.push(`It listens on port ${db.port}, so --port ${asked} does not apply.`);
  } else if (db.portTaken !== null) {
    lines.push(`Port ${db.portTaken} is taken, so the embedded PostgreSQL listens on port ${db.port}; choose one with --port.`);
  } else {
    lines.push(`Embedded PostgreSQL is running on port ${db.port}${asked === undefined ? ' (another with --port)' : ''}.`);
  }
  lines.push('Connect with:', `  psql ${db.connectionString}`, 'Press Ctrl-C to stop.');
  return `${lines.join('\n')}\n`;
}

/**
 * Holds one connection (so an owner that exits sees a client and leaves the
 * server running), takes the server over once its owner is gone, and returns
 * the exit code when Ctrl-C or the server's end stops it.
 */
async function watch(db: EmbeddedDatabase): Promise<number> {
  const client = new pg.Client({ connectionString: db.connectionString, application_name: 'pmsync db' });
  let lost = false;
  client.on('error', () => (lost = true));
  await client.connect();
  return new Promise<number>((resolve) => {
    const finish = async (code: number, message?: string) => {
      clearInterval(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await client.end().catch(() => undefined);
      if (message) process.stderr.write(message);
      if (code === EXIT.OK) {
        const outcome = await db.stop();
        if (outcome === 'left running') {
          const owner = db.owner();
          process.stdout.write(
            owner !== null
              ? `Left the embedded PostgreSQL running: pmsync process ${owner} started it and stops it when it ends.\n`
              : 'Left the embedded PostgreSQL running: other clients are still connected; the next pmsync command stops it when it is done.\n',
          );
        } else process.stdout.write('Embedded PostgreSQL stopped.\n');
      }
      resolve(code);
    };
    const onSignal = () => void finish(EXIT.OK);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const timer = setInterval(() => {
      if (lost || !db.running()) {
        void finish(EXIT.UNREACHABLE, 'pmsync: the embedded PostgreSQL stopped underneath "pmsync db" (was it stopped by hand?).\n');
        return;
      }
      if (!db.owned && db.adoptIfOrphaned()) {
        process.stdout.write(
          'The process that started the embedded PostgreSQL has ended; this one keeps it running and stops it on Ctrl-C.\n',
        );
      }
    }, WATCH_MS);
  });
}
