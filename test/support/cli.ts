/**
 * Runs the pmsync CLI as a real child process, as an operator would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'bin/pmsync.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Environment for a child: no inherited pmsync settings, logs quiet unless asked. */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', NO_COLOR: '1' };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcess & { output: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }) as ChildProcess & {
    output: { stdout: string; stderr: string };
  };
  child.output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (child.output.stdout += String(d)));
  child.stderr!.on('data', (d) => (child.output.stderr += String(d)));
  return child;
}

export function waitExit(child: ReturnType<typeof spawnCli>): Promise<CliResult> {
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, ...child.output }));
  });
}

export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return waitExit(spawnCli(args, env));
}

/** Writes a JSON config file with the given sources and returns its path. */
export function writeConfig(config: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
  const file = join(dir, 'pmsync.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}
