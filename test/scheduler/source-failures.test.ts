import { describe, expect, it } from 'vitest';
import { HttpError, PmsyncError, QuotaExhaustedError, TimeoutError } from '../../src/errors.ts';
import { LockedError } from '../../src/state/locks.ts';
import { classifyFailure, pauseMs } from '../../src/scheduler/source-failures.ts';

const MINUTE = 60_000;
const http = (code: ConstructorParameters<typeof HttpError>[0], status: number, retryable = false) =>
  new HttpError(code, status, 'https://api.example/x', `failed with ${status}`, retryable);

describe('classifyFailure', () => {
  it('reads refused credentials, server errors, timeouts and unreachable hosts as the source failing', () => {
    expect(classifyFailure(http('AUTH_FAILED', 401))).toEqual({ kind: 'auth', code: 'AUTH_FAILED' });
    expect(classifyFailure(http('HTTP_ERROR', 403))).toEqual({ kind: 'auth', code: 'HTTP_ERROR' });
    // withAuthAdvice wraps a 401 in a plain PmsyncError.
    expect(classifyFailure(new PmsyncError('AUTH_FAILED', 'refused'))?.kind).toBe('auth');
    for (const status of [500, 502, 503, 408]) expect(classifyFailure(http('RETRYABLE', status, true))?.kind).toBe('server');
    expect(classifyFailure(http('BAD_RESPONSE', 200, true))?.kind).toBe('server');
    expect(classifyFailure(new TimeoutError('did not complete'))).toEqual({ kind: 'timeout', code: 'RETRYABLE' });
    expect(classifyFailure(new PmsyncError('API_UNREACHABLE', 'ECONNREFUSED', { retryable: true }))?.kind).toBe('network');
    expect(classifyFailure(new PmsyncError('RETRYABLE', 'ECONNRESET', { retryable: true }))?.kind).toBe('network');
  });

  it('leaves out what a pause of the source would not cure', () => {
    expect(classifyFailure(new QuotaExhaustedError('used up', new Date()))).toBeNull();
    expect(classifyFailure(http('QUOTA_EXHAUSTED', 429))).toBeNull();
    expect(classifyFailure(http('VALIDATION_FAILED', 400))).toBeNull();
    expect(classifyFailure(http('NOT_FOUND', 404))).toBeNull();
    expect(classifyFailure(http('BAD_RESPONSE', 200, false))).toBeNull(); // a body too large
    expect(classifyFailure(new PmsyncError('DB_UNREACHABLE', 'database down'))).toBeNull();
    expect(classifyFailure(new PmsyncError('SHUTDOWN', 'stopping'))).toBeNull();
    expect(classifyFailure(new LockedError('s', 'r', 0))).toBeNull();
    expect(classifyFailure(new Error('a bug'))).toBeNull();
  });
});

describe('pauseMs', () => {
  it('doubles from 1 minute to 1 hour for server, timeout and network failures', () => {
    const pauses = Array.from({ length: 9 }, (_, i) => pauseMs('server', i + 1) / MINUTE);
    expect(pauses).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
    expect(pauseMs('timeout', 3)).toBe(pauseMs('server', 3));
    expect(pauseMs('network', 3)).toBe(pauseMs('server', 3));
  });

  it('doubles from 15 minutes to 6 hours for refused credentials, and never overflows', () => {
    const pauses = Array.from({ length: 7 }, (_, i) => pauseMs('auth', i + 1) / MINUTE);
    expect(pauses).toEqual([15, 30, 60, 120, 240, 360, 360]);
    expect(pauseMs('auth', 10_000)).toBe(360 * MINUTE);
  });
});
