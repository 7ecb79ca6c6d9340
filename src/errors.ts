/**
 * Errors carry a stable `code` for logs, exit codes and metrics, and say whether
 * retrying the same request can succeed. Messages never contain secrets: they
 * are built from redacted URLs and never from request headers or bodies.
 */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'AUTH_FAILED'
  | 'NOT_FOUND'
  | 'VALIDATION_FAILED'
  | 'QUOTA_EXHAUSTED'
  | 'RETRYABLE'
  | 'HTTP_ERROR'
  | 'BAD_RESPONSE'
  | 'DB_UNREACHABLE'
  | 'API_UNREACHABLE'
  | 'REDIS_UNREACHABLE'
  | 'LOCKED'
  | 'SHUTDOWN'
  | 'USAGE';

export class PmsyncError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PmsyncError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

export class ConfigError extends PmsyncError {
  readonly problems: string[];

  constructor(problems: string[]) {
    super('CONFIG_INVALID', `Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export class HttpError extends PmsyncError {
  readonly status: number;
  /** Redacted URL of the request. */
  readonly url: string;

  constructor(code: ErrorCode, status: number, url: string, message: string, retryable: boolean) {
    super(code, message, { retryable });
    this.name = 'HttpError';
    this.status = status;
    this.url = url;
  }
}

/** An attempt that did not complete within its deadline (requestTimeoutMs): retryable, and told apart from other network failures. */
export class TimeoutError extends PmsyncError {
  constructor(message: string) {
    super('RETRYABLE', message, { retryable: true });
    this.name = 'TimeoutError';
  }
}

/**
 * What ran out: the scheduled-spend budget (checks stop, backfills and resyncs
 * go on), the allowance of scheduled work, the whole quota, or the server's
 * own count (it answered 429).
 */
export type QuotaScope = 'budget' | 'allowance' | 'quota' | 'server';

export class QuotaExhaustedError extends PmsyncError {
  /** When the quota day resets and requests may be sent again. */
  readonly resumeAt: Date;
  readonly scope: QuotaScope;

  constructor(message: string, resumeAt: Date, scope: QuotaScope = 'quota') {
    super('QUOTA_EXHAUSTED', message);
    this.name = 'QuotaExhaustedError';
    this.resumeAt = resumeAt;
    this.scope = scope;
  }
}

export class ShutdownError extends PmsyncError {
  constructor() {
    super('SHUTDOWN', 'Stopped by a shutdown signal at a page boundary; the checkpoint is saved.');
    this.name = 'ShutdownError';
  }
}

/** Process exit codes, documented in the README. */
export const EXIT = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  CONFIG: 3,
  AUTH: 4,
  QUOTA: 5,
  UNREACHABLE: 6,
  PARTIAL: 7,
  INTERRUPTED: 130,
} as const;

export function exitCodeFor(err: unknown): number {
  return err instanceof PmsyncError ? exitCodeOf(err.code) : EXIT.FAILED;
}

/** The exit code for an error code; anything unknown is a failure (1). */
export function exitCodeOf(code: string): number {
  switch (code) {
    case 'CONFIG_INVALID':
      return EXIT.CONFIG;
    case 'USAGE':
      return EXIT.USAGE;
    case 'AUTH_FAILED':
      return EXIT.AUTH;
    case 'QUOTA_EXHAUSTED':
      return EXIT.QUOTA;
    case 'DB_UNREACHABLE':
    case 'API_UNREACHABLE':
    case 'REDIS_UNREACHABLE':
      return EXIT.UNREACHABLE;
    case 'SHUTDOWN':
      return EXIT.INTERRUPTED;
    default:
      return EXIT.FAILED;
  }
}
