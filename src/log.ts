import { pino, type Logger } from 'pino';
import type { Redactor } from './redact.ts';

export type { Logger };

/**
 * Structured JSON logs (pino). Every string field and message passes through the
 * redactor, so a secret that slips into an error message never reaches a log.
 */
export function createLogger(redactor: Redactor, options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
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
    (options.destination ?? process.stderr) as pino.DestinationStream,
  );
}
