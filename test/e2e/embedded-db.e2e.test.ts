/**
 * The embedded PostgreSQL shared by several pmsync processes, as an analyst
 * and an operator use it: `pmsync db` in one terminal, other commands in
 * another. A command stops only a server it started; `db` keeps it running
 * while it runs, takes it over when its starter ends, and stops it last.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli, spawnCli, waitExit } from '../support/cli.ts';
import { eventually, kill } from '../serve/support.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'pmsync-embedded-'));
chmodSync(dataDir, 0o755);
const env = cliEnv({ PMSYNC_DATA_DIR: dataDir });
const children: Array<ReturnType<typeof spawnCli>> = [];
afterAll(() => {
  for (const c of children) kill(c, 'SIGKILL');
  // A failed test may leave the server behind its killed owner: stop it (fast shutdown) before removing its folder.
  const pidFile = join(dataDir, 'pgdata', 'postmaster.pid');
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
    } catch {
      // already gone
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

function start(args: string[]): ReturnType<typeof spawnCli> {
  const child = spawnCli(args, env);
  children.push(child);
  return child;
}

async function printed(child: ReturnType<typeof spawnCli>, pattern: RegExp): Promise<RegExpMatchArray> {
  return eventually(async () => {
    if (child.exitCode !== null)
      throw new Error(`exited ${child.exitCode} before printing ${pattern}:\n${child.output.stdout}${child.output.stderr}`);
    return child.output.stdout.match(pattern) ?? undefined;
  }, String(pattern));
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('the embedded PostgreSQL shared by several commands', () => {
  it('a command run beside `pmsync db` borrows its server and leaves it running; db hands over and stops it last', async () => {
    const first = start(['db', '--port', '0']);
    const url = (await printed(first, /psql (postgres:\/\/\S+)/))[1]!;

    // Another command without DATABASE_URL uses the same server, and leaves it running when it ends.
    const status = await runCli(['status'], { ...env, LOG_LEVEL: 'info' });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/No source is configured/);
    expect(status.stderr).toMatch(/using the embedded PostgreSQL another pmsync process runs/);
    expect(first.exitCode).toBeNull();
    expect(await answers(url)).toBe(true);

    // A second db borrows it too, and names the process that owns it.
    const second = start(['db']);
    const owner = await printed(second, /already running, started by pmsync process (\d+)/);
    expect(Number(owner[1])).toBe(first.pid);

    // The owner ends while the second db is connected: it leaves the server running, and the second adopts it.
    first.kill('SIGINT');
    const firstEnd = await waitExit(first);
    expect(firstEnd.code).toBe(0);
    expect(firstEnd.stdout).toMatch(/Left the embedded PostgreSQL running: other clients are still connected/);
    await printed(second, /has ended; this one keeps it running and stops it on Ctrl-C/);
    expect(await answers(url)).toBe(true);

    // The last one out stops it.
    second.kill('SIGINT');
    const secondEnd = await waitExit(second);
    expect(secondEnd.code).toBe(0);
    expect(secondEnd.stdout).toMatch(/Embedded PostgreSQL stopped\./);
    expect(await answers(url)).toBe(false);
    expect(existsSync(join(dataDir, 'pgdata', 'postmaster.pid'))).toBe(false);
  });

  it('db refuses a --port that is taken, saying how to choose another', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const empty = mkdtempSync(join(tmpdir(), 'pmsync-embedded-port-'));
      const res = await runCli(['db', '--port', String(port)], { ...env, PMSYNC_DATA_DIR: empty });
      rmSync(empty, { recursive: true, force: true });
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(new RegExp(`port ${port} is taken: choose another with --port, or 0 for any free port`));
    } finally {
      blocker.close();
    }
  });
});
