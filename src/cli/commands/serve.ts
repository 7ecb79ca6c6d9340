import { Command, InvalidArgumentError } from 'commander';
import type { Config } from '../../config/schema.ts';
import { EXIT } from '../../errors.ts';
import { configFrom, fail, requireSources, withApp, type GlobalOptions } from '../shared.ts';
import { attachProgressLog } from '../progress.ts';
import { ipcTestControl } from '../../serve/test-control.ts';

interface ServeCliOptions {
  port?: number;
  host?: string;
  catchUp: boolean;
  webhooks: boolean;
}

function port(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 65_535) throw new InvalidArgumentError('expected a port number (0 picks a free one)');
  return Number(text);
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('keep every source in sync on its schedules, receive webhooks, and answer /healthz, /readyz and /metrics until SIGTERM')
    .option('-p, --port <n>', 'HTTP port (default: serve.port, PMSYNC_PORT or PORT, else 8080)', port)
    .option('--host <host>', 'interface to listen on (default 0.0.0.0)')
    .option('--no-catch-up', 'do not run, at start-up, the cron fires of pinned streams missed while no process was up')
    .option('--no-webhooks', 'do not receive webhooks or run the refresh worker here (another process does)')
    .addHelpText(
      'after',
      `
Scheduling: each source spends a daily budget (default 15% of its quota) where it buys
the most freshness, learning from its own runs when each stream changes; webhook
notifications trigger a check of their stream. Streams may be pinned to a cron expression
in the config file's "schedules" section (see docs/operations.md). Several serve
processes may share one database: runs go through one queue, each stream runs in one
process at a time, and the budget holds across them.

On SIGTERM or SIGINT: stops taking work, lets the pages in flight commit, and exits 0
within serve.shutdownTimeoutSeconds (default 30), or 1 if runs were still going then
(their checkpoints are saved; the next start resumes them). A second signal exits at once.

The config file is reloaded while serving: every serve.reloadSeconds (default 30) when it
or a secret file it names changed, and at once on SIGHUP. Sources added, changed or
removed take effect at the next tick; a file with problems is refused (every problem
logged) and the last good configuration stays in force.`,
    )
    .action(async (opts: ServeCliOptions, cmd: Command) => {
      try {
        // The command line's settings win over the file's, at start and at every reload.
        const load = (): Config => {
          const loaded = configFrom(cmd, { statusToken: true });
          requireSources(loaded);
          const serve = { ...loaded.serve };
          if (opts.port !== undefined) serve.port = opts.port;
          if (opts.host !== undefined) serve.host = opts.host;
          const schedules = { ...loaded.schedules, catchUp: loaded.schedules.catchUp && opts.catchUp };
          return { ...loaded, serve, schedules };
        };
        const config = load();
        const serve = config.serve;
        const path = cmd.optsWithGlobals<GlobalOptions>().config ?? process.env.PMSYNC_CONFIG;
        // The scheduler, the HTTP server and the metrics load only when serve runs (src/cli/main.ts).
        const { startServe } = await import('../../serve/serve.ts');
        const { mountWebhooks } = await import('../../serve/webhooks.ts');
        // Only under a test harness (NODE_ENV=test): its clock and ticks come over IPC.
        const control = ipcTestControl();
        process.exitCode = await withApp(
          config,
          async (app) => {
            // Long runs (a first pass of thousands of pages) say where they stand in the log at a steady interval.
            const detachProgress = config.quiet ? () => undefined : attachProgressLog(app);
            // SIGHUP would otherwise end the process; one during start-up is answered once serve runs.
            let hangup: (() => void) | 'pending' | undefined;
            const onHangup = () => (typeof hangup === 'function' ? hangup() : (hangup = 'pending'));
            process.on('SIGHUP', onHangup);
            const running = await startServe(app, config, {
              webhooks: opts.webhooks ? mountWebhooks : undefined,
              configFile: path ? { path, load } : undefined,
              manualTicks: control !== undefined,
            });
            control?.attach(running);
            const pending = hangup === 'pending';
            hangup = () => {
              if (path) void running.reload({ force: true });
              else app.logger.info('SIGHUP: there is no config file to reload (the source comes from CORE_* environment variables)');
            };
            if (pending) hangup();
            await new Promise<void>((resolve) => app.abort.signal.addEventListener('abort', () => resolve(), { once: true }));
            const again = () => process.exit(EXIT.INTERRUPTED);
            process.once('SIGINT', again);
            process.once('SIGTERM', again);
            // Closing the pool can hang on a query that never returns; the shutdown timeout bounds the whole exit.
            const hard = setTimeout(
              () => {
                app.logger.error('shutdown timeout reached; exiting');
                process.exit(EXIT.FAILED);
              },
              (serve.shutdownTimeoutSeconds + 2) * 1000,
            );
            hard.unref();
            const drained = await running.stop();
            process.off('SIGHUP', onHangup);
            detachProgress();
            return drained ? EXIT.OK : EXIT.FAILED;
          },
          control ? { now: control.now } : {},
        );
      } catch (err) {
        fail(err);
      }
    });
}
