import { pino, type Logger } from 'pino';
import { prettyLine, type LogFormat } from './log-format.ts';
import type { Redactor } from './redact.ts';

export type { Logger };

/** Anything lines can be written to: a stream, or the CLI's terminal (which keeps the progress bar below them). */
export interface LogDestination {
  write(chunk: string): unknown;
}

export interface LoggerOptions {
  level?: string;
  /** Where lines go (stderr unless set). */
  destination?: LogDestination;
  /** JSON lines (the default), or pretty lines for a person at a terminal. */
  format?: LogFormat;
  /** Colour the level of pretty lines. */
  color?: boolean;
}

/**
 * Structured logs (pino). Every string field and message passes through the
 * redactor, so a secret that slips into an error message never reaches a log.
 * Pretty lines are rewritten from the redacted JSON ones, on the same stream.
 */
export function createLogger(redactor: Redactor, options: LoggerOptions = {}): Logger {
  const out = options.destination ?? process.stderr;
  const destination = options.format === 'pretty' ? prettyStream(out, options.color ?? false) : out;
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: { app: 'pmsync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => redactor.scrub(obj),
      },
      hooks: {
        logMethod(args, method) {
          const redacted = args.map((a) => (typeof a === 'string' ? redactor.redact(a) : a)) as Parameters<typeof method>;
          method.apply(this, redacted);
        },
      },
    },
    destination as pino.DestinationStream,
  );
}

/** pino writes one JSON line per write; each becomes one pretty line, written synchronously in order. */
function prettyStream(out: LogDestination, color: boolean): pino.DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) out.write(`${prettyLine(line, { color })}\n`);
    },
  };
}
