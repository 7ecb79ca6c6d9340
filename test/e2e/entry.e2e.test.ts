/**
 * bin/pmsync.js: the command line (src/cli/main.ts) as a program, started
 * with pmsync's heap flags when run by its shebang (src/cli/process.ts). The
 * same output and exit codes as src/cli/main.ts run alone, all of a long
 * output written before process.exit() delivered, signals the command does
 * not handle end the process as Node would (and as PID 1 of a container,
 * exit with 128 plus the signal's number), an escaped error is printed and
 * exits 1, a closed stdout ends it quietly, and a terminal's answer is read.
 * Signals the command handles: shutdown.e2e.test.ts, which runs through this
 * entry like every end-to-end test.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { START_FLAGS } from '../../src/cli/process.ts';
import { CLI, cliEnv, ROOT, writeConfig, type CliResult } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const MAIN = join(ROOT, 'src/cli/main.ts');
const ENTRIES = [
  ['bin/pmsync.js', CLI],
  ['src/cli/main.ts alone', MAIN],
] as const;
const TENANT = { apikey: 'entry-key-R4', username: 'entry.user', password: 'entry-pass-T8', variant: 'core' as const };

let sim: Simulator;
let db: TestDatabase;
/** A database that accepts connections and never answers: a command waits in its first query, before its signal handlers exist. */
let silent: Server;
const connections: Socket[] = [];

beforeAll(async () => {
  sim = await startSimulator({ seed: 12, tenants: [{ ...TENANT, sizes: { customers: 10 } }] });
  db = await createTestDatabase();
  silent = createServer((socket) => connections.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const s of connections) s.destroy();
  silent?.close();
  await sim?.close();
  await db?.drop();
});

/** `pmsync sync` against the silent database. */
function waitingSync(): NodeJS.ProcessEnv {
  return cliEnv({
    DATABASE_URL: `postgres://pmsync@127.0.0.1:${(silent.address() as { port: number }).port}/pmsync`,
    CORE_BASE_URL: sim.coreBaseUrl(),
    CORE_APIKEY: TENANT.apikey,
    CORE_USERNAME: TENANT.username,
    CORE_PASSWORD: TENANT.password,
  });
}

/** A module preloaded before the command line (`node --import`) that runs `code`. */
function preloaded(code: string): string {
  return `--import=data:text/javascript,${encodeURIComponent(code)}`;
}

function run(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { nodeArgs?: string[]; onStart?: (child: ReturnType<typeof spawn>) => void } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  options.onStart?.(child);
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe('bin/pmsync.js', () => {
  it('answers as the command line run alone: the same output and exit codes', async () => {
    for (const args of [
      ['--help'],
      ['sync', '--help'],
      ['nosuch'],
      ['sync', '--bogus'],
      ['--config', '/nonexistent/pmsync.json', 'status'],
    ]) {
      const [viaEntry, alone] = await Promise.all(ENTRIES.map(([, entry]) => run(entry, args, cliEnv())));
      expect(viaEntry, args.join(' ')).toEqual(alone);
      expect(viaEntry?.code, args.join(' ')).not.toBeNull();
    }
  });

  it('delivers all of a long output written just before process.exit()', async () => {
    // 3,000 sources refused, four problems each: about 1 MB on stderr, then process.exit(3). Run alone,
    // Node drops what the pipe has not taken yet when process.exit() comes (seen: all but the first 128 kB).
    // pmsync's output streams block on a pipe (src/cli/process.ts).
    const broken = writeConfig({ sources: Array.from({ length: 3000 }, (_, i) => ({ kind: 'core', name: `s${i}` })) });
    for (const [name, entry] of ENTRIES) {
      const res = await run(entry, ['--config', broken, 'status'], cliEnv());
      expect(res.code, name).toBe(3);
      const lines = res.stderr.trimEnd().split('\n');
      expect(lines[0], name).toBe('Invalid configuration:');
      expect(lines, name).toHaveLength(1 + 4 * 3000);
      expect(lines.at(-1), name).toMatch(
        /sources\[2999\]\.password: write the value, \{ "env": "VARIABLE" \} or \{ "file": "\/path\/of\/a\/file" \}$/,
      );
    }
  });

  it('a signal the running command does not handle ends the process by that signal', async () => {
    for (const [name, entry] of ENTRIES) {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        const before = connections.length;
        const res = await run(entry, ['sync'], waitingSync(), {
          onStart: (child) => {
            const poll = setInterval(() => {
              if (connections.length > before) {
                clearInterval(poll);
                child.kill(signal);
              }
            }, 20);
          },
        });
        expect({ code: res.code, signal: res.signal }, `${name}, ${signal}`).toEqual({ code: null, signal });
      }
    }
  });

  it('an error that escapes the command is printed on stderr and exits 1', async () => {
    const nodeArgs = [preloaded(`setTimeout(() => { throw new Error('escaped from the command'); }, 100);`)];
    const res = await run(CLI, ['sync'], waitingSync(), { nodeArgs });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^Error: escaped from the command\n {4}at /m);
  });

  it('a reader that closes stdout early ends the command quietly with exit code 0', async () => {
    await db.pool.query(
      `INSERT INTO pmsync.runs (source, resource, mode, status, started_at)
       SELECT 'clinic', 'customers', 'incremental', 'succeeded', now() - g * interval '1 minute' FROM generate_series(1, 20000) g`,
    );
    for (const [name, entry] of ENTRIES) {
      const res = await run(entry, ['runs', '--limit', '20000'], cliEnv({ DATABASE_URL: db.url }), {
        onStart: (child) => child.stdout!.once('data', () => child.stdout!.destroy()),
      });
      expect({ code: res.code, signal: res.signal, stderr: res.stderr }, name).toEqual({ code: 0, signal: null, stderr: '' });
    }
  });

  it('on a terminal, the command reads its answer from it (webhooks register asks before live changes)', async () => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('script(1) from util-linux is needed to run pmsync on a pseudo-terminal');
    }
    const config = writeConfig({
      sources: [
        {
          kind: 'core',
          name: 'clinic',
          baseUrl: sim.coreBaseUrl(),
          apikey: TENANT.apikey,
          username: TENANT.username,
          password: TENANT.password,
          webhook: { tenantId: 'sim01_1000' },
        },
      ],
    });
    const command = `${process.execPath} ${CLI} --config ${config} webhooks register --source clinic --url http://127.0.0.1:9`;
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...cliEnv({ DATABASE_URL: db.url }), TERM: 'xterm' },
    });
    let screen = '';
    child.stdout.on('data', (d) => {
      screen += String(d);
      if (screen.includes('[y/N]') && !child.stdin.writableEnded) child.stdin.end('y\r');
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(screen).toMatch(/These are live changes to the account\. Apply them\? \[y\/N\] \S*y\s/);
    expect(screen).toMatch(/done: \d+ created/);
    expect(code).toBe(0);
    expect(sim.tenant(TENANT.apikey).webhooks().length).toBeGreaterThan(0);
  });

  it("run by its shebang, starts Node with pmsync's heap flags", async () => {
    // As `npx pmsync` or a global install runs it: the file itself, with Node 24 first on PATH.
    const report = preloaded(`process.stderr.write('execArgv ' + JSON.stringify(process.execArgv) + '\\n');`);
    const child = spawn(CLI, ['--help'], {
      cwd: ROOT,
      env: { ...cliEnv(), PATH: `${dirname(process.execPath)}:${process.env.PATH}`, NODE_OPTIONS: report },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr: stderr.replace(/^execArgv .*\n/m, '') }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^Usage: pmsync /);
    expect(JSON.parse(/^execArgv (.*)$/m.exec(stderr)?.[1] ?? 'null')).toEqual([...START_FLAGS]);
  });

  it('as PID 1 of a container, exits with 128 plus the number of a signal the running command does not handle', async () => {
    // A new PID namespace (util-linux unshare, as root) makes pmsync its PID 1: the kernel ignores a signal
    // that PID 1 has no handler for, so without its own it would wait for a SIGKILL.
    try {
      execFileSync('unshare', ['--pid', '--fork', 'true'], { stdio: 'ignore' });
    } catch {
      throw new Error('unshare(1) from util-linux, run as root, is needed to run pmsync as PID 1 of a PID namespace');
    }
    const before = connections.length;
    const child = spawn('unshare', ['--pid', '--fork', '--kill-child', process.execPath, CLI, 'sync'], {
      cwd: ROOT,
      env: waitingSync(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const poll = setInterval(() => {
      if (connections.length <= before) return;
      clearInterval(poll);
      // unshare's child, the node process, is PID 1 of the namespace: signal it from outside.
      const pid = Number(
        execFileSync('pgrep', ['-P', String(child.pid)])
          .toString()
          .trim(),
      );
      process.kill(pid, 'SIGTERM');
    }, 20);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearInterval(poll);
    expect({ code, stderr }).toEqual({ code: 143, stderr: '' });
  });
});
