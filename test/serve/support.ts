/**
 * Helpers for tests that run `pmsync serve` as a child process.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnCli, waitExit, type CliResult } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

export interface ServeProcess {
  child: ReturnType<typeof spawnCli>;
  /** http://127.0.0.1:PORT */
  url: string;
  exited: Promise<CliResult>;
}

/** Starts `pmsync serve --port 0` (logs at info) and resolves once it listens. */
export async function startServeCli(args: string[], env: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const child = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', ...args], { ...env, LOG_LEVEL: 'info' });
  const exited = waitExit(child);
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      for (const line of child.output.stderr.split('\n')) {
        if (!line.includes('"msg":"serving"')) continue;
        const parsed = JSON.parse(line) as { url: string };
        child.stderr!.off('data', onData);
        resolve(parsed.url);
        return;
      }
    };
    child.stderr!.on('data', onData);
    void exited.then((r) => reject(new Error(`serve exited (${r.code}) before listening:\n${r.stderr}`)));
  });
  return { child, url, exited };
}

/** Polls until `check` returns a value other than undefined; `timeoutMs` is a hang guard for an unloaded machine, scaled. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}
