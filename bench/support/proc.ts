/**
 * Child processes for the end-to-end parts: the pmsync CLI and the simulator,
 * each in its own process, with the child's memory sampled from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { START_ENV, START_FLAGS } from '../../src/cli/process.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = `${ROOT}bin/pmsync.js`;
export const SIMULATOR = `${ROOT}simulator/main.ts`;
/**
 * The ways the pmsync process can be started, compared by `bench/run.ts --e2e-start` and
 * `bench/fleet.ts --start`: as shipped (the bin with pmsync's heap flags, as its shebang, `npm run
 * pmsync` and the image start it; src/cli/process.ts), with Node's defaults, or with the old
 * generation grown by a factor of 1.5 instead of 2, or capped at 1 GB instead of grown by a fixed factor.
 */
export const STARTS = {
  bin: {
    label: `\`MALLOC_MMAP_THRESHOLD_=${START_ENV.MALLOC_MMAP_THRESHOLD_} node ${START_FLAGS.join(' ')} bin/pmsync.js\` (as shipped)`,
    args: [...START_FLAGS, CLI],
    env: { ...START_ENV },
  },
  defaults: { label: "`node bin/pmsync.js` (Node's defaults)", args: [CLI] },
  'grow-50': {
    label: '`node --max-semi-space-size=8 --heap-growing-percent=50 bin/pmsync.js`',
    args: ['--max-semi-space-size=8', '--heap-growing-percent=50', CLI],
  },
  'old-1g': {
    label: '`node --max-semi-space-size=8 --max-old-space-size=1024 bin/pmsync.js`',
    args: ['--max-semi-space-size=8', '--max-old-space-size=1024', CLI],
  },
  // glibc's allocator with a fixed mmap threshold: blocks of 128 KB and more (socket reads, query results) are mapped
  // and given back to the system when freed, rather than left in the heap (whose threshold otherwise grows to 32 MB).
  'mmap-128k': {
    label: `\`MALLOC_MMAP_THRESHOLD_=131072 node ${START_FLAGS.join(' ')} bin/pmsync.js\``,
    args: [...START_FLAGS, CLI],
    env: { MALLOC_MMAP_THRESHOLD_: '131072' },
  },
  // glibc's allocator with two arenas instead of eight per core: threads share them.
  'arenas-2': {
    label: `\`MALLOC_ARENA_MAX=2 node ${START_FLAGS.join(' ')} bin/pmsync.js\``,
    args: [...START_FLAGS, CLI],
    env: { MALLOC_ARENA_MAX: '2' },
  },
} satisfies Record<string, { label: string; args: readonly string[]; env?: Record<string, string> }>;

/** The environment a start adds to the process's own. */
export function startEnv(start: StartName): Record<string, string> {
  const s = STARTS[start];
  return 'env' in s ? s.env : {};
}
export type StartName = keyof typeof STARTS;

/** Parses a comma-separated list of start names, or says which exist. */
export function parseStarts(text: string): StartName[] {
  const names = text.split(',').map((s) => s.trim());
  for (const n of names) {
    if (!(n in STARTS)) throw new Error(`unknown start "${n}"; starts: ${Object.keys(STARTS).join(', ')}`);
  }
  return names as StartName[];
}

export interface MemorySample {
  /** Milliseconds since the child started. */
  atMs: number;
  rssBytes: number;
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  /** VmHWM: the kernel's own peak resident set size of the child, last read before it exited. */
  peakRssBytes: number;
  samples: MemorySample[];
}

/** Reads VmRSS and VmHWM (bytes) of a live process; null once it is gone. */
export function readMemory(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return null;
  }
}

export function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', NO_COLOR: '1', ...extra };
}

/** Runs the pmsync CLI to completion, sampling its memory every `sampleMs`. */
export function runCliMeasured(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { sampleMs?: number; nodeArgs?: string[]; start?: StartName } = {},
): Promise<ChildResult> {
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...STARTS[options.start ?? 'bin'].args, ...args], {
    cwd: ROOT,
    env: { ...env, ...startEnv(options.start ?? 'bin') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  const samples: MemorySample[] = [];
  let peak = 0;
  const sample = () => {
    if (child.pid === undefined) return;
    const m = readMemory(child.pid);
    if (m === null) return;
    if (Number.isFinite(m.hwm)) peak = Math.max(peak, m.hwm);
    if (!Number.isFinite(m.rss)) return;
    samples.push({ atMs: performance.now() - started, rssBytes: m.rss });
  };
  const timer = setInterval(sample, options.sampleMs ?? 50);
  return new Promise((resolve, reject) => {
    child.once('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearInterval(timer);
      resolve({ code, signal, stdout, stderr, wallMs: performance.now() - started, peakRssBytes: peak, samples });
    });
  });
}

export interface RunningSimulator {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the simulator (`npm run simulator`) on a free loopback port and waits until it listens. */
export async function startSimulatorProcess(
  args: string[],
  options: { timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<RunningSimulator> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), SIMULATOR, '--host', '127.0.0.1', '--port', '0', ...args], {
    cwd: ROOT,
    env: cliEnv({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start in ${timeoutMs} ms: ${err}`)), timeoutMs);
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited with ${code}: ${err}`));
    });
  });
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
