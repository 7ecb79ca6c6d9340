/**
 * One setting for slow machines: PMSYNC_TEST_TIME_SCALE (default 1)
 * multiplies vitest's test and hook timeouts and every hang guard in the
 * tests, that is how long a test waits for an event (a log line, a process
 * exit, a row) before it gives up. A guard never decides a result, so a
 * larger scale makes a slow run slow, not red. Guards are written for an
 * unloaded machine and go through `scaled` (or `waitUntil`, which applies it).
 */
const TIME_SCALE_VARIABLE = 'PMSYNC_TEST_TIME_SCALE';

/** The scale a value of the variable sets; throws saying what to write. */
export function parseTimeScale(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 1;
  const scale = Number(text);
  if (!Number.isFinite(scale) || scale < 1) {
    throw new Error(`${TIME_SCALE_VARIABLE} must be a number of at least 1 (3 suits a busy 2-core machine), not "${text}"`);
  }
  return scale;
}

const TIME_SCALE = parseTimeScale(process.env[TIME_SCALE_VARIABLE]);

/** A hang guard written for an unloaded machine, stretched for this one. */
export function scaled(ms: number): number {
  return Math.round(ms * TIME_SCALE);
}

/**
 * Polls `probe` every `everyMs` until it returns a truthy value, and returns
 * that value; fails naming `what` when the scaled `timeoutMs` passes first.
 */
export async function waitUntil<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const guard = scaled(options.timeoutMs ?? 30_000);
  const deadline = Date.now() + guard;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${guard / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, options.everyMs ?? 50));
  }
}
