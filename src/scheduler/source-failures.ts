/**
 * When a source fails as a whole, and how long serve then leaves it alone.
 *
 * A run that ends with one of these errors, after the HTTP client's own
 * retries, says the source itself is failing, not one of its streams:
 * - auth: 401 or 403, the credentials are refused (a person must fix them);
 * - server: 5xx, or a 2xx body that is not JSON;
 * - timeout: an attempt did not complete within requestTimeoutMs;
 * - network: the host cannot be reached, or the connection was reset.
 * The source is then paused (src/state/source-health.ts): no check, backfill,
 * webhook-triggered run or record refresh is sent to it until the pause ends,
 * and each further failure doubles the pause up to a cap. A success ends it.
 *
 * Not a failure: an exhausted quota (429 or pmsync's own ledger) already holds
 * the stream until the reset; a refused filter (400), a missing record (404),
 * a body too large or a database problem belong to one stream or to pmsync,
 * and pausing the source would not cure them.
 */
import { HttpError, PmsyncError, TimeoutError } from '../errors.ts';

export type FailureKind = 'auth' | 'server' | 'timeout' | 'network';

export interface SourceFailure {
  kind: FailureKind;
  /** The error's stable code (AUTH_FAILED, RETRYABLE, API_UNREACHABLE, ...). */
  code: string;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export interface PausePolicy {
  /** The first pause. */
  baseMs: number;
  /** No pause is longer. */
  capMs: number;
}

/**
 * The pause after the n-th consecutive failure is base * 2^(n-1), at most cap.
 *
 * - server, timeout, network: 1 minute doubling to 1 hour. Outages of an API
 *   gateway mostly last minutes, and the client already retried for up to two
 *   minutes, so the first retry comes soon; seven failures in a row (about two
 *   hours down) reach the cap, after which the source costs one attempt an
 *   hour. A hanging source is the dearest to retry (each attempt holds a
 *   worker for requestTimeoutMs), which the same doubling bounds.
 * - auth: 15 minutes doubling to 6 hours. Refused credentials do not mend by
 *   themselves: someone must fix the key or the user, so trying more often
 *   buys nothing; the 15 minutes catch a key rotated at the gateway a little
 *   before the config. After the cap a few requests a day say whether the fix
 *   happened. A 401 is not retried by the client, so each attempt is one request.
 */
export const PAUSES: Record<FailureKind, PausePolicy> = {
  server: { baseMs: MINUTE, capMs: HOUR },
  timeout: { baseMs: MINUTE, capMs: HOUR },
  network: { baseMs: MINUTE, capMs: HOUR },
  auth: { baseMs: 15 * MINUTE, capMs: 6 * HOUR },
};

/** How long the source is left alone after its n-th consecutive failure of this kind. */
export function pauseMs(kind: FailureKind, failures: number): number {
  const { baseMs, capMs } = PAUSES[kind];
  return Math.min(capMs, baseMs * 2 ** Math.min(Math.max(0, failures - 1), 30));
}

/** The source-wide failure an error says, or null for one that is not (see above). */
export function classifyFailure(err: unknown): SourceFailure | null {
  if (!(err instanceof PmsyncError)) return null;
  const code = err.code;
  if (err instanceof HttpError) {
    if (err.status === 401 || err.status === 403) return { kind: 'auth', code };
    if (err.status >= 500 || err.status === 408) return { kind: 'server', code };
    if (code === 'BAD_RESPONSE' && err.retryable) return { kind: 'server', code };
    return null;
  }
  if (code === 'AUTH_FAILED') return { kind: 'auth', code };
  if (err instanceof TimeoutError) return { kind: 'timeout', code };
  if (code === 'API_UNREACHABLE' || code === 'RETRYABLE') return { kind: 'network', code };
  return null;
}
