/**
 * The quota ledger: every request is counted in PostgreSQL per gateway key and
 * quota day BEFORE it is sent. One conditional upsert both counts and decides,
 * so restarts and any number of processes on one database never send more than
 * the configured quota.
 *
 * Scheduled syncs may spend the quota minus the reserve; webhook refreshes and
 * on-demand resyncs ("priority") may spend all of it.
 */
import { createHash } from 'node:crypto';
import { QuotaExhaustedError } from '../errors.ts';
import type { Queryable } from '../db/pool.ts';
import type { Purpose, RequestBudget } from '../api/http.ts';
import { quotaDayOf, type QuotaDayRule } from './quota-day.ts';

export interface QuotaSettings extends QuotaDayRule {
  /** Ledger key: a fingerprint of the gateway key, never the key itself. */
  keyId: string;
  dailyLimit: number;
  reservePercent: number;
  /** Name used in messages. */
  label: string;
}

/** A stable, non-reversible identifier for a gateway key. */
export function keyFingerprint(apikey: string): string {
  return `k_${createHash('sha256').update(apikey).digest('hex').slice(0, 16)}`;
}

export function allowance(settings: Pick<QuotaSettings, 'dailyLimit' | 'reservePercent'>, purpose: Purpose): number {
  if (purpose === 'priority') return settings.dailyLimit;
  return Math.floor((settings.dailyLimit * (100 - settings.reservePercent)) / 100);
}

export interface QuotaSnapshot {
  day: string;
  used: number;
  dailyLimit: number;
  exhaustedUntil: Date | null;
  resetsAt: Date;
}

export class QuotaLedger implements RequestBudget {
  private readonly db: Queryable;
  private readonly settings: QuotaSettings;
  private readonly now: () => Date;

  constructor(db: Queryable, settings: QuotaSettings, now: () => Date = () => new Date()) {
    this.db = db;
    this.settings = settings;
    this.now = now;
  }

  async take(purpose: Purpose): Promise<void> {
    const now = this.now();
    const qd = quotaDayOf(now, this.settings);
    const limit = allowance(this.settings, purpose);
    const res = await this.db.query<{ used: number }>(
      `INSERT INTO pmsync.quota_usage AS u (key_id, quota_day, used, daily_limit, updated_at)
       SELECT $1, $2::date, 1, $3, $5 WHERE $4 > 0
       ON CONFLICT (key_id, quota_day) DO UPDATE SET used = u.used + 1, daily_limit = excluded.daily_limit, updated_at = $5
       WHERE u.used < $4 AND (u.exhausted_until IS NULL OR u.exhausted_until <= $5)
       RETURNING used`,
      [this.settings.keyId, qd.day, this.settings.dailyLimit, limit, now],
    );
    if (res.rowCount === 0) {
      const snap = await this.snapshot();
      if (snap.exhaustedUntil) {
        throw new QuotaExhaustedError(
          `The API answered 429 for ${this.settings.label} earlier on quota day ${qd.day}: nothing is sent until ${snap.exhaustedUntil.toISOString()}, when requests resume.`,
          snap.exhaustedUntil,
        );
      }
      const reserve =
        purpose === 'sync' && this.settings.reservePercent > 0
          ? ` (${this.settings.reservePercent}% is kept for webhook refreshes and resyncs)`
          : '';
      throw new QuotaExhaustedError(
        `Daily quota for ${this.settings.label} is used up for ${qd.day}: ${snap.used} of ${limit} requests${reserve}. Stopped at the last checkpoint; requests resume after ${qd.resetsAt.toISOString()}.`,
        qd.resetsAt,
      );
    }
  }

  /**
   * The spec does not say when a 429 window ends; the configured quota day's
   * reset is used, so nothing is sent for this key until then.
   */
  async exhausted(): Promise<Error> {
    const now = this.now();
    const qd = quotaDayOf(now, this.settings);
    await this.db.query(
      `INSERT INTO pmsync.quota_usage AS u (key_id, quota_day, used, daily_limit, exhausted_until, updated_at)
       VALUES ($1, $2::date, 0, $3, $4, $5)
       ON CONFLICT (key_id, quota_day) DO UPDATE SET exhausted_until = $4, updated_at = $5`,
      [this.settings.keyId, qd.day, this.settings.dailyLimit, qd.resetsAt, now],
    );
    return new QuotaExhaustedError(
      `The API answered 429 for ${this.settings.label}: its daily quota is exhausted (other integrations may share it). Stopped with the checkpoint saved; requests resume after ${qd.resetsAt.toISOString()}.`,
      qd.resetsAt,
    );
  }

  async snapshot(): Promise<QuotaSnapshot> {
    const now = this.now();
    const qd = quotaDayOf(now, this.settings);
    const res = await this.db.query<{ used: number; exhausted_until: Date | null }>(
      'SELECT used, exhausted_until FROM pmsync.quota_usage WHERE key_id = $1 AND quota_day = $2::date',
      [this.settings.keyId, qd.day],
    );
    const row = res.rows[0];
    const exhaustedUntil = row?.exhausted_until && row.exhausted_until > now ? row.exhausted_until : null;
    return { day: qd.day, used: row?.used ?? 0, dailyLimit: this.settings.dailyLimit, exhaustedUntil, resetsAt: qd.resetsAt };
  }
}
