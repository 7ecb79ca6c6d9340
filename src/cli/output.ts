/**
 * Where the CLI's output goes. What a command answers (its summary, status,
 * a report) goes to stdout; logs go to stderr, as pretty lines on a terminal
 * and JSON lines anywhere else (a file, a pipe, cron, `docker logs`), so the
 * two never interleave in a captured stdout. On a terminal, the progress bar
 * lives on stderr's last line and log lines are printed above it.
 */
import { ConfigError } from '../errors.ts';
import { LOG_FORMATS, type LogFormat } from '../log-format.ts';

export interface OutputOptions {
  logFormat?: string;
  quiet?: boolean;
}

export interface Output {
  format: LogFormat;
  level: string;
  /** Only problems: logs at error, no progress, and of a run summary only what did not succeed. */
  quiet: boolean;
}

/**
 * `--log-format` wins, then PMSYNC_LOG_FORMAT, then pretty on a terminal and
 * JSON elsewhere. `--quiet` sets the level to error; else LOG_LEVEL, else the
 * command's default.
 */
export function resolveOutput(opts: OutputOptions, env: NodeJS.ProcessEnv, stderrIsTTY: boolean, defaultLevel = 'info'): Output {
  const asked = opts.logFormat ?? (env.PMSYNC_LOG_FORMAT || undefined);
  if (asked !== undefined && !LOG_FORMATS.includes(asked as LogFormat)) {
    throw new ConfigError([`PMSYNC_LOG_FORMAT: "${asked}" is not a log format: use json or pretty`]);
  }
  const format = (asked as LogFormat | undefined) ?? (stderrIsTTY ? 'pretty' : 'json');
  const quiet = opts.quiet === true;
  return { format, quiet, level: quiet ? 'error' : env.LOG_LEVEL || defaultLevel };
}

/** Lines written in place at the bottom of a terminal. */
const CLEAR_LINE = '\r\x1b[2K';

/**
 * stderr with an optional status line (the progress bar) at the bottom: a log
 * line clears it, is written, and the status line is drawn again below it.
 */
export class Terminal {
  private status = '';
  private readonly out: NodeJS.WriteStream;

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.out = out;
  }

  get isTTY(): boolean {
    return this.out.isTTY === true;
  }

  /** A log line (or several), above the status line. */
  write(text: string): void {
    if (!this.status) {
      this.out.write(text);
      return;
    }
    this.out.write(`${CLEAR_LINE}${text}${this.fit(this.status)}`);
  }

  setStatus(text: string): void {
    this.status = text;
    this.out.write(`${CLEAR_LINE}${this.fit(text)}`);
  }

  clearStatus(): void {
    if (this.status) this.out.write(CLEAR_LINE);
    this.status = '';
  }

  /** A status line longer than the terminal would wrap, and clearing it would then leave its head behind. */
  private fit(text: string): string {
    const columns = this.out.columns || 80;
    return text.length < columns ? text : `${text.slice(0, Math.max(0, columns - 2))}…`;
  }
}
