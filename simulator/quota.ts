import { utcDate } from './time.ts';
import type { ApikeyUsage } from './types.ts';

// Daily request quota per gateway apikey. A quota day starts at the tenant's
// reset hour (UTC) and is named by the UTC date on which it starts.

const HOUR_MS = 3_600_000;

export function quotaDay(nowMs: number, resetHourUtc: number): string {
  return utcDate(nowMs - resetHourUtc * HOUR_MS);
}

interface Usage {
  requests: number;
  rejected: number;
  byDay: Map<string, number>;
}

export interface QuotaPlan {
  /** null when unlimited. */
  readonly dailyQuota: number | null;
  readonly quotaResetHourUtc: number;
}

export class QuotaLedger {
  private readonly usage = new Map<string, Usage>();

  /** Counts one authenticated request; false (and not counted) when the day's quota is used up. */
  admit(apikey: string, plan: QuotaPlan, nowMs: number): boolean {
    const usage = this.entry(apikey);
    usage.requests++;
    const day = quotaDay(nowMs, plan.quotaResetHourUtc);
    const used = usage.byDay.get(day) ?? 0;
    if (plan.dailyQuota !== null && used >= plan.dailyQuota) {
      usage.rejected++;
      return false;
    }
    usage.byDay.set(day, used + 1);
    return true;
  }

  /** A refusal that is not the quota's own doing (an injected exhaustion). */
  reject(apikey: string): void {
    const usage = this.entry(apikey);
    usage.requests++;
    usage.rejected++;
  }

  snapshot(apikey: string, plan: QuotaPlan, nowMs: number): ApikeyUsage {
    const usage = this.entry(apikey);
    const day = quotaDay(nowMs, plan.quotaResetHourUtc);
    return {
      requests: usage.requests,
      rejected: usage.rejected,
      byQuotaDay: Object.fromEntries(usage.byDay),
      quotaDay: day,
      usedToday: usage.byDay.get(day) ?? 0,
      dailyQuota: plan.dailyQuota,
    };
  }

  private entry(apikey: string): Usage {
    let usage = this.usage.get(apikey);
    if (usage === undefined) {
      usage = { requests: 0, rejected: 0, byDay: new Map() };
      this.usage.set(apikey, usage);
    }
    return usage;
  }
}
