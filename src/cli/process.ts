/**
 * The process a command runs in: the V8 flags it is started with, and what
 * the command line sets up before any command runs.
 *
 * The heap flags are start-up flags, given where pmsync is started: the
 * shebang of bin/pmsync.js (`npx pmsync`, a global install), the `pmsync` and
 * `demo` npm scripts, and the image's entrypoint (test/unit/start-flags.test.ts
 * holds the three to START_FLAGS). Without them V8 sizes the young generation
 * from the machine's memory (about 106 MB here) and lets the old generation
 * grow to four times the live heap between full collections, so a
 * 1,000,000-row sync with about 30 MB of live data peaked at about 350 MB.
 * With them: a 24 MB young generation, and the old generation grown by a
 * factor of 2. There is no ceiling on the old generation: the heap limit stays
 * Node's own, sized from the machine's or the container's memory, so `serve`
 * over a large fleet grows as its fleet does (bench/RESULTS.md, "The
 * launcher: start-up flags against a worker thread").
 */

/** The flags pmsync's entry points start Node with. */
export const START_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=100'] as const;

/**
 * The environment the bin's shebang and the image start Node with: glibc's
 * allocator maps blocks of 128 KB and more (socket reads, query results) and
 * gives them back when freed, where its threshold would otherwise grow to
 * 32 MB and keep them in its heap. A replica deciding 250 practices peaked
 * about 20 MB (7%) lower with it, and 1,000 practices on four replicas stayed
 * under 400 MB each (bench/RESULTS.md, "Two parts of it made smaller, and
 * glibc's mmap threshold measured" and "The whole day again, with the mmap
 * threshold"). Other C libraries ignore it. The npm
 * scripts do not set it (they run on any platform's shell).
 */
export const START_ENV = { MALLOC_MMAP_THRESHOLD_: '131072' } as const;

/** What a signal's default action would report as an exit code: a shell's 128 plus its number. */
const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Sets up the process for the command line:
 * - stdout and stderr block when they are pipes, as they do on a terminal or
 *   a file: a command that prints much and then calls `process.exit()` (3,000
 *   sources refused, four problems each) would otherwise lose what the pipe
 *   had not taken yet (the `set-blocking` technique of npm and yargs).
 * - As PID 1 of a container the kernel ignores a signal that has no handler,
 *   so `docker stop` would wait for its SIGKILL: there, a signal no command
 *   handles exits with 128 plus its number, as a shell reports a kill.
 *   Elsewhere the signal's default action ends the process, as Node's would.
 */
export function setUpProcess(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const handle = (stream as unknown as { _handle?: { setBlocking?: (blocking: boolean) => void } })._handle;
    handle?.setBlocking?.(true);
  }
  if (process.pid === 1) {
    for (const [signal, code] of Object.entries(SIGNAL_EXIT) as Array<[keyof typeof SIGNAL_EXIT, number]>) {
      process.on(signal, () => {
        // The command's own handler, when it has one, decides (a sync stops at the next page boundary).
        if (process.listenerCount(signal) === 1) process.exit(code);
      });
    }
  }
}
