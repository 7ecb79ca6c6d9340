/**
 * The first module of the worker thread that runs a command (src/cli/launch.ts
 * explains why): it makes the thread's `process` behave as the process's own
 * for the command, then runs the command's module.
 */
import { isatty, ReadStream } from 'node:tty';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromThread, TerminalInfo, ThreadData, ToThread } from './launch.ts';

const data = workerData as ThreadData;
const port = parentPort!;

/** The thread's stdout and stderr pass through the main thread; on a terminal they report it, as the process's own would. */
function actAsTerminal(stream: NodeJS.WriteStream, info: TerminalInfo): void {
  stream.isTTY = true;
  stream.columns = info.columns;
  stream.rows = info.rows;
  stream.getColorDepth = () => info.colorDepth;
  stream.hasColors = (count?: unknown) => (typeof count === 'number' ? count : 16) <= 2 ** info.colorDepth;
  stream.getWindowSize = () => [stream.columns, stream.rows];
}
if (data.terminals.stdout) actAsTerminal(process.stdout, data.terminals.stdout);
if (data.terminals.stderr) actAsTerminal(process.stderr, data.terminals.stderr);

// A thread's own stdin is empty. A terminal is read directly, when a command first asks for it.
if (isatty(0)) {
  let stdin: ReadStream | undefined;
  Object.defineProperty(process, 'stdin', { configurable: true, enumerable: true, get: () => (stdin ??= new ReadStream(0)) });
}

// The process's IPC channel, through the main thread: process.send and 'message' events work as in a process of its own.
if (data.ipc) {
  process.send = (message: unknown) => {
    port.postMessage({ type: 'ipc', message } satisfies FromThread);
    return true;
  };
}

port.on('message', (message: ToThread) => {
  switch (message.type) {
    case 'ipc':
      process.emit('message', message.message, undefined);
      return;
    case 'signal':
      if (process.listenerCount(message.signal) > 0) process.emit(message.signal, message.signal);
      else port.postMessage({ type: 'unhandled-signal', signal: message.signal } satisfies FromThread);
      return;
    case 'resize': {
      const stream = process[message.stream];
      stream.columns = message.columns;
      stream.rows = message.rows;
      stream.emit('resize');
      return;
    }
    case 'stdout-closed':
      process.stdout.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' }));
      return;
  }
});
// Relaying never keeps the thread alive: it ends when the command is done.
port.unref();

await import(data.entry);
