/**
 * Helpers shared by the commands: loading configuration, opening the app,
 * signal handling and turning errors into exit codes and one clear message.
 */
import type { Command } from 'commander';
import { openApp, type App, type OpenOptions } from '../app.ts';
import { loadConfig } from '../config/load.ts';
import type { Config, SourceConfig } from '../config/schema.ts';
import { databaseLost, isConnectionError } from '../db/pool.ts';
import { ConfigError, EXIT, exitCodeFor, PmsyncError } from '../errors.ts';
import { validNames } from '../strict-schema.ts';
import { STREAM_REGISTRY } from '../sync/stream-registry.ts';
import { tableNamed } from '../sync/streams/index.ts';
import { tableStreams } from '../sync/table-settings.ts';
import { resolveOutput, Terminal, type OutputOptions } from './output.ts';

export interface GlobalOptions extends OutputOptions {
  config?: string;
}

/** The configuration, with the log format, level and quietness the command line and environment ask for. */
export function configFrom(cmd: Command, options: { defaultLevel?: string; config?: Config; statusToken?: boolean } = {}): Config {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const config = options.config ?? loadConfig(STREAM_REGISTRY, { configFile: opts.config, statusToken: options.statusToken });
  const output = resolveOutput(opts, process.env, process.stderr.isTTY === true, options.defaultLevel);
  return { ...config, logLevel: output.level, logFormat: output.format, quiet: output.quiet };
}

/** The sources `--source NAME` selects (all without it); a name that matches none is a usage error (exit 2). */
export function findSource(config: Config, name: string | undefined): SourceConfig[] {
  if (name === undefined) return config.sources;
  const s = config.sources.find((x) => x.name === name);
  if (!s) {
    const known = config.sources.map((x) => x.name);
    throw new PmsyncError('USAGE', `--source ${name}: no such source${validNames(name, known, 'sources')}`);
  }
  return [s];
}

/**
 * PMSYNC_TEST_NOW (an ISO instant) freezes pmsync's clock so end-to-end tests
 * can place runs on chosen quota days and compare cursors between runs. It is
 * honoured only when NODE_ENV is "test"; operators never need it.
 */
export function testClock(env: NodeJS.ProcessEnv = process.env): (() => Date) | undefined {
  if (env.NODE_ENV !== 'test' || !env.PMSYNC_TEST_NOW) return undefined;
  const at = Date.parse(env.PMSYNC_TEST_NOW);
  if (Number.isNaN(at)) throw new ConfigError([`PMSYNC_TEST_NOW: "${env.PMSYNC_TEST_NOW}" is not an ISO date-time`]);
  return () => new Date(at);
}

/**
 * Runs a command body with the app open, closing it whatever happens. Log
 * lines go to stderr through `terminal`, which keeps a progress bar below them.
 */
export async function withApp<T>(
  config: Config,
  body: (app: App, terminal: Terminal) => Promise<T>,
  options: OpenOptions = {},
): Promise<T> {
  const now = options.now ?? testClock();
  const terminal = new Terminal(process.stderr);
  const logColor = terminal.isTTY && !process.env.NO_COLOR;
  const app = await openApp(config, { logDestination: terminal, logColor, ...options, ...(now ? { now } : {}) });
  const onSignal = (signal: NodeJS.Signals) => {
    if (app.abort.signal.aborted) {
      // A second signal: stop now. Every committed page kept its checkpoint; an open transaction rolls back.
      process.exit(EXIT.INTERRUPTED);
    }
    app.logger.warn({ signal }, 'shutdown requested: stopping at the next page boundary');
    app.abort.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    return await body(app, terminal);
  } finally {
    terminal.clearStatus();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await app.close();
  }
}

/** Prints the error without secrets (messages are built redacted) and sets the exit code. */
export function fail(thrown: unknown): never {
  const err = isConnectionError(thrown) ? databaseLost(thrown) : thrown;
  const message = err instanceof ConfigError ? err.message : `pmsync: ${(err as Error).message ?? String(err)}`;
  process.stderr.write(`${message}\n`);
  process.exit(exitCodeFor(err));
}

export function requireSources(config: Config): void {
  if (config.sources.length === 0) {
    throw new ConfigError([
      'no sources configured: set CORE_BASE_URL, CORE_APIKEY, CORE_USERNAME and CORE_PASSWORD (read only when no config file is given), or pass --config FILE (or PMSYNC_CONFIG) with a "sources" list. Try "npm run demo" to see pmsync against the local simulator.',
    ]);
  }
}

/**
 * The tables `--table` names, a table or its resource (`giftcertificates` is
 * `gift_certificates`); names a source has no table of are refused (exit 2),
 * every one listed with the tables it has. Undefined when none was given.
 */
export function tableNames(sources: SourceConfig[], names: string[] | undefined): string[] | undefined {
  if (!names) return undefined;
  const problems: string[] = [];
  const tables = new Set<string>();
  for (const source of sources) {
    const known = tableStreams(source).map((s) => s.table.name);
    for (const name of names) {
      const table = tableNamed(source, name);
      if (table && known.includes(table)) tables.add(table);
      else problems.push(`--table ${name}: source "${source.name}" (${source.kind}) has no such table${validNames(name, known, 'tables')}`);
    }
  }
  if (problems.length > 0) throw new PmsyncError('USAGE', problems.join('\n'));
  return [...tables];
}
