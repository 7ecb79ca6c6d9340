/**
 * How pmsync runs: the process's main thread starts one worker thread, which
 * runs the command line (src/cli/main.ts), and only relays between it and the
 * outside world.
 *
 * Why a thread: V8 sizes the main thread's heap from the machine's memory and
 * only start-up flags change that. With 4 GB of heap limit the young
 * generation grows to about 106 MB while a sync allocates quickly, and the old
 * generation grows to about four times the live heap before a full
 * collection, so a 1,000,000-row sync peaked at 349 MB with about 30 MB of
 * live data. A worker thread takes its own limits (`resourceLimits`): a young
 * generation of 24 MB, and an old generation capped at 1 GB, under which V8
 * grows the old generation by a smaller factor between full collections
 * (bench/RESULTS.md, "Memory: what a command loads"). Flags the user gives
 * (`--max-semi-space-size`, `--max-old-space-size`) still win over these.
 *
 * What the main thread relays, so a command behaves as when it ran alone:
 * - SIGINT, SIGTERM and SIGHUP reach only the main thread: each is passed on
 *   and emitted on the thread's `process`, so the command's own handlers run
 *   (a sync stops at the next page boundary; serve re-reads its config file
 *   on SIGHUP). A signal the command does not
 *   handle ends the process by that signal, as Node would (as PID 1 of a
 *   container, which ignores it, the process exits 128 + its number instead).
 * - stdout and stderr: Node passes the thread's writes on in order, and still
 *   delivers them when the thread calls `process.exit()`. On a terminal the
 *   thread's streams say so (isTTY, size, colours, resize), so log lines are
 *   pretty and progress bars fit; stdin is then read by the thread itself
 *   (the prompt of `webhooks register`). A reader closing stdout (`| head`)
 *   is reported to the thread as EPIPE.
 * - An IPC channel the process was spawned with (a parent's `fork`) is the
 *   thread's: `process.send` and `message` events pass through.
 * - The thread's exit code becomes the process's; an error that escapes the
 *   thread is printed on stderr and the process exits 1.
 */
import { constants } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';

/** Two semi-spaces of 8 MB and the young large-object space: what `--max-semi-space-size=8` gives. */
export const YOUNG_GENERATION_MB = 24;
/** Far above a sync's live heap (about 30 MB), and low enough for V8 to grow the old generation by less than 4x. */
export const OLD_GENERATION_MB = 1024;
const MB = 1024 * 1024;

const RELAYED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type RelayedSignal = (typeof RELAYED_SIGNALS)[number];

export interface TerminalInfo {
  columns: number;
  rows: number;
  colorDepth: number;
}

export interface ThreadData {
  /** The module the thread runs (a file: URL). */
  entry: string;
  /** Set for each of stdout and stderr that is a terminal. */
  terminals: Partial<Record<'stdout' | 'stderr', TerminalInfo>>;
  /** The process has an IPC channel to its parent, relayed to the thread. */
  ipc: boolean;
}

export type ToThread =
  | { type: 'signal'; signal: RelayedSignal }
  | { type: 'resize'; stream: 'stdout' | 'stderr'; columns: number; rows: number }
  | { type: 'stdout-closed' }
  | { type: 'ipc'; message: unknown };

export type FromThread = { type: 'unhandled-signal'; signal: RelayedSignal } | { type: 'ipc'; message: unknown };

function terminalInfo(stream: NodeJS.WriteStream): TerminalInfo | undefined {
  return stream.isTTY ? { columns: stream.columns, rows: stream.rows, colorDepth: stream.getColorDepth() } : undefined;
}

/** Runs `entry` in a worker thread with pmsync's heap limits; the process exits with the thread's exit code. */
export function launch(entry: URL): void {
  const terminals: ThreadData['terminals'] = {};
  const stdoutInfo = terminalInfo(process.stdout);
  const stderrInfo = terminalInfo(process.stderr);
  if (stdoutInfo) terminals.stdout = stdoutInfo;
  if (stderrInfo) terminals.stderr = stderrInfo;
  const ipc = typeof process.send === 'function';
  const workerData: ThreadData = { entry: entry.href, terminals, ipc };
  // Never above what Node would give the process (a container's memory limit lowers it).
  const defaultLimitMb = Math.floor(getHeapStatistics().heap_size_limit / MB);
  const worker = new Worker(new URL('./thread.ts', import.meta.url), {
    argv: process.argv.slice(2),
    workerData,
    resourceLimits: {
      maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
      maxOldGenerationSizeMb: Math.min(OLD_GENERATION_MB, defaultLimitMb),
    },
  });
  const send = (message: ToThread) => worker.postMessage(message);

  const relaySignal = (signal: RelayedSignal) => send({ type: 'signal', signal });
  for (const signal of RELAYED_SIGNALS) process.on(signal, relaySignal);
  const resizers = (['stdout', 'stderr'] as const)
    .filter((name) => terminals[name])
    .map((name) => {
      const stream = process[name];
      const onResize = () => send({ type: 'resize', stream: name, columns: stream.columns, rows: stream.rows });
      stream.on('resize', onResize);
      return () => stream.off('resize', onResize);
    });
  let running = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    if (running) send({ type: 'stdout-closed' });
  });

  const fromParent = (message: unknown) => send({ type: 'ipc', message });
  if (ipc) {
    process.on('message', fromParent);
    // The channel never keeps the process alive: it ends when the thread does.
    process.channel?.unref();
  }

  worker.on('message', (message: FromThread) => {
    if (message.type === 'ipc') {
      process.send?.(message.message as Parameters<NonNullable<typeof process.send>>[0]);
      return;
    }
    if (message.type === 'unhandled-signal') {
      // Nothing in the thread handles it: the default action, which ends the process by that signal.
      for (const signal of RELAYED_SIGNALS) process.off(signal, relaySignal);
      process.kill(process.pid, message.signal);
      // Still here: the process is PID 1 of a container, which ignores it. Exit as a shell reports a kill.
      process.exit(128 + constants.signals[message.signal]);
    }
  });
  worker.on('error', (err: unknown) => {
    process.stderr.write(`${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  });
  worker.on('exit', (code) => {
    running = false;
    for (const signal of RELAYED_SIGNALS) process.off(signal, relaySignal);
    process.off('message', fromParent);
    for (const off of resizers) off();
    process.exitCode = code;
  });
}
