import { combine, Rng } from './random.ts';
import type { CoreResource, Faults } from './types.ts';

// Deliberate failures. Each setFaults restarts the fault random stream from
// the seed, so a given fault configuration fails the same requests (by
// arrival order) on every run.

export const DEFAULT_HANG_MS = 30_000;

export type GatewayFault =
  | { kind: 'none' }
  | { kind: 'reset' }
  | { kind: 'timeout'; hangMs: number }
  | { kind: 'error'; status: 500 | 502 | 503 }
  | { kind: 'failNext' };

export class FaultInjector {
  private faults: Faults = {};
  private failNext = 0;
  private quotaLeft: number | undefined;
  private rng: Rng;
  private readonly seed: number;

  constructor(seed: number) {
    this.seed = combine(seed, 0xfa17);
    this.rng = new Rng(this.seed);
  }

  set(faults: Faults): void {
    for (const name of ['errorRate', 'timeoutRate', 'resetRate'] as const) {
      const rate = faults[name];
      if (rate !== undefined && !(rate >= 0 && rate <= 1)) throw new Error(`${name} must be between 0 and 1`);
    }
    const rates = (faults.errorRate ?? 0) + (faults.timeoutRate ?? 0) + (faults.resetRate ?? 0);
    if (rates > 1) throw new Error('errorRate + timeoutRate + resetRate must not exceed 1');
    for (const name of ['hangMs', 'slowMs', 'failNext', 'quotaExhaustAfter', 'retryAfterSeconds'] as const) {
      const value = faults[name];
      if (value !== undefined && !(Number.isFinite(value) && value >= 0)) throw new Error(`${name} must be a non-negative number`);
    }
    this.faults = { ...faults };
    this.failNext = Math.floor(faults.failNext ?? 0);
    this.quotaLeft = faults.quotaExhaustAfter === undefined ? undefined : Math.floor(faults.quotaExhaustAfter);
    this.rng = new Rng(this.seed);
  }

  get slowMs(): number {
    return this.faults.slowMs ?? 0;
  }

  get retryAfterSeconds(): number | undefined {
    return this.faults.retryAfterSeconds;
  }

  /** The fault, if any, for the next API request. */
  draw(): GatewayFault {
    if (this.failNext > 0) {
      this.failNext--;
      return { kind: 'failNext' };
    }
    const { resetRate = 0, timeoutRate = 0, errorRate = 0 } = this.faults;
    if (resetRate + timeoutRate + errorRate === 0) return { kind: 'none' };
    const roll = this.rng.next();
    if (roll < resetRate) return { kind: 'reset' };
    if (roll < resetRate + timeoutRate) return { kind: 'timeout', hangMs: this.faults.hangMs ?? DEFAULT_HANG_MS };
    if (roll < resetRate + timeoutRate + errorRate) return { kind: 'error', status: this.rng.pick([500, 502, 503] as const) };
    return { kind: 'none' };
  }

  /** Consumes one Core/Subset request of the quotaExhaustAfter allowance; true once it is spent. */
  quotaExhausted(): boolean {
    if (this.quotaLeft === undefined) return false;
    if (this.quotaLeft <= 0) return true;
    this.quotaLeft--;
    return false;
  }

  /** How many records of a served page to change, for the mutateBetweenPages fault. */
  mutationsAfterPage(resource: CoreResource): number {
    const rule = this.faults.mutateBetweenPages;
    return rule !== undefined && rule.resource === resource ? Math.max(0, Math.floor(rule.count)) : 0;
  }

  /** `count` distinct positions out of `length`, drawn from the fault stream. */
  choose(length: number, count: number): number[] {
    const positions = Array.from({ length }, (_, i) => i);
    for (let i = 0; i < Math.min(count, length); i++) {
      const j = i + this.rng.int(length - i);
      [positions[i], positions[j]] = [positions[j] ?? 0, positions[i] ?? 0];
    }
    return positions.slice(0, Math.min(count, length));
  }
}
