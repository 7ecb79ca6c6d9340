/**
 * The quota ledger: every request is counted in PostgreSQL per gateway key,
 * quota day and purpose BEFORE it is sent. One conditional upsert both counts
 * and decides, so restarts and any number of processes on one database never
 * send more than they may.
 *
 * What each purpose may spend on a quota day:
 * - check, webhook, full: the scheduled-spend budget (`budget`), shared by the
 *   three, and never past the allowance;
 * - backfill: the allowance (the quota minus the reserve) minus whatever part
 *   of the budget is still unspent, so a multi-day backfill never eats the
 *   requests the day's checks are planned on;
 * - resync (on-demand: resync, status --check, webhook registration): the whole
 *   quota, reserve included.
 */
import { createHash } from 'node:crypto';
import { UNLIMITED } from '../config/schema.ts';
import { QuotaExhaustedError } from '../errors.ts';
import type { Queryable } from '../db/pool.ts';
import { PURPOSES, type Purpose, type RequestBudget } from '../api/http.ts';
import { quotaDayOf, type QuotaDayRule } from './quota-day.ts';

export { PURPOSES, type Purpose };

/** The purposes the scheduled-spend budget covers. */
export const BUDGETED: ReadonlySet<Purpose> = new Set<Purpose>(['check', 'webhook', 'full']);

export interface QuotaSettings extends QuotaDayRule {
  /** Ledger key: a fingerprint of the gateway key, never the key itself. */
  keyId: string;
  dailyLimit: number;
  reservePercent: number;
  /** Requests a quota day that checks, webhook-triggered fetches and full refreshes may spend together. */
  budget: number;
  /** Name used in messages. */
  label: string;
}

/** A stable, non-reversible identifier for a gateway key. */
export function keyFingerprint(apikey: string): string {
  return `k_${createHash('sha256').update(apikey).digest('hex').slice(0, 16)}`;
}

/** Requests scheduled work (everything but on-demand requests) may send on a quota day. */
export function allowance(settings: Pick<QuotaSettings, 'dailyLimit' | 'reservePercent'>): number {
  return Math.floor((settings.dailyLimit * (100 - settings.reservePercent)) / 100);
}

export type SpentByPurpose = Record<Purpose, number>;

export interface QuotaSnapshot {
  day: string;
  used: number;
  byPurpose: SpentByPurpose;
  dailyLimit: number;
  allowance: number;
  budget: number;
  /** Checks, webhook-triggered fetches and full refreshes so far. */
  budgetUsed: number;
  exhaustedUntil: Date | null;
  startsAt: Date;
  resetsAt: Date;
}

const noneSpent = (): SpentByPurpose => ({ check: 0, backfill: 0, webhook: 0, resync: 0, full: 0 });

/**
 * The conditions of one take, on the stored row `u` (the upsert's update) and
 * on a first row of the day (the insert), for $3 = daily limit, $4 =
 * allowance, $6 = budget, $7 = the budget backfills leave for checks (the
 * budget, or 0 when it is unlimited: nothing is held for checks then).
 */
const RULES: Record<'budgeted' | 'backfill' | 'resync', { update: string; insert: string }> = {
  // Every parameter needs a type, whether the rule uses it or not.
  budgeted: {
    update: 'u.used < $4::int AND u.used_check + u.used_webhook + u.used_full < $6::int',
    insert: '$4::int > 0 AND $6::int > 0 AND $7::int >= 0',
  },
  backfill: {
    update: 'u.used + greatest(0, $7::int - (u.used_check + u.used_webhook + u.used_full)) < $4::int',
    insert: '$7::int < $4::int AND $6::int >= 0',
  },
  // Resyncs ignore the allowance ($4).
  resync: { update: 'u.used < $3::int AND $4::int >= 0', insert: '$3::int > 0 AND $6::int >= 0 AND $7::int >= 0' },
};

function ruleOf(purpose: Purpose): keyof typeof RULES {
  return BUDGETED.has(purpose) ? 'budgeted' : purpose === 'backfill' ? 'backfill' : 'resync';
}

/** The one statement that counts a request of `purpose`, or returns no row when it may not be sent. */
export function takeSql(purpose: Purpose): string {
  const rule = RULES[ruleOf(purpose)];
  const column = `used_${purpose}`;
  return `INSERT INTO pmsync.quota_usage AS u (key_id, quota_day, used, ${column}, daily_limit, budget, updated_at)
    SELECT $1, $2::date, 1, 1, $3::int, $6::int, $5::timestamptz WHERE ${rule.insert}
    ON CONFLICT (key_id, quota_day) DO UPDATE SET used = u.used + 1, ${column} = u.${column} + 1,
      daily_limit = excluded.daily_limit, budget = excluded.budget, updated_at = $5
    WHERE ${rule.update} AND (u.exhausted_until IS NULL OR u.exhausted_until <= $5::timestamptz)
    RETURNING used`;
}

export class QuotaLedger implements RequestBudget {
  private readonly db: Queryable;
  readonly settings: QuotaSettings;
  private readonly now: () => Date;

  constructor(db: Queryable, settings: QuotaSettings, now: () => Date = () => new Date()) {
    this.db = db;
    this.settings = settings;
    this.now = now;
  }

  async take(purpose: Purpose): Promise<void> {
    const now = this.now();
    const qd = quotaDayOf(now, this.settings);
    const s = this.settings;
    const held = s.budget >= UNLIMITED ? 0 : s.budget;
    const res = await this.db.query<{ used: number }>(takeSql(purpose), [s.keyId, qd.day, s.dailyLimit, allowance(s), now, s.budget, held]);
    if (res.rowCount === 0) throw await this.refusal(purpose);
  }

  private async refusal(purpose: Purpose): Promise<QuotaExhaustedError> {
    const snap = await this.snapshot();
    const s = this.settings;
    const resumes = `requests resume after ${snap.resetsAt.toISOString()}`;
    if (snap.exhaustedUntil) {
      return new QuotaExhaustedError(
        `The API answered 429 for ${s.label} earlier on quota day ${snap.day}: nothing is sent until ${snap.exhaustedUntil.toISOString()}, when requests resume.`,
        snap.exhaustedUntil,
        'server',
      );
    }
    const rule = ruleOf(purpose);
    if (rule === 'budgeted' && snap.budgetUsed >= snap.budget) {
      const b = snap.byPurpose;
      return new QuotaExhaustedError(
        `The scheduled-spend budget of ${s.label} is used up for ${snap.day}: ${snap.budgetUsed} of ${snap.budget} requests ` +
          `(checks ${b.check}, webhook-triggered ${b.webhook}, full refreshes ${b.full}). Backfills and resyncs go on from the rest of the quota; ` +
          `checks ${resumes}. Raise the budget (schedules.budget, or the source's quota.budget) if the day's changes need more.`,
        snap.resetsAt,
        'budget',
      );
    }
    if (rule === 'resync') {
      return new QuotaExhaustedError(
        `Daily quota for ${s.label} is used up for ${snap.day}: ${snap.used} of ${snap.dailyLimit} requests. ${cap(resumes)}.`,
        snap.resetsAt,
        'quota',
      );
    }
    const held = rule === 'backfill' && snap.budget < UNLIMITED ? Math.max(0, snap.budget - snap.budgetUsed) : 0;
    return new QuotaExhaustedError(
      `Daily allowance for ${s.label} is used up for ${snap.day}: ${snap.used} of ${snap.allowance} requests` +
        (s.reservePercent > 0 ? ` (${s.reservePercent}% of the quota is kept for resyncs)` : '') +
        (held > 0 ? `, with ${held} more held for the day's scheduled checks` : '') +
        `. Stopped at the last checkpoint; ${resumes}.`,
      snap.resetsAt,
      'allowance',
    );
  }

  /**
   * The spec does not say when a 429 window ends; the configured quota day's
   * reset is used, so nothing is sent for this key until then.
   */
  async exhausted(): Promise<Error> {
    const now = this.now();
    const qd = quotaDayOf(now, this.settings);
    await this.db.query(
      `INSERT INTO pmsync.quota_usage AS u (key_id, quota_day, used, daily_limit, budget, exhausted_until, updated_at)
       VALUES ($1, $2::date, 0, $3, $6, $4, $5)
       ON CONFLICT (key_id, quota_day) DO UPDATE SET exhausted_until = $4, updated_at = $5`,
      [this.settings.keyId, qd.day, this.settings.dailyLimit, qd.resetsAt, now, this.settings.budget],
    );
    return new QuotaExhaustedError(
      `The API answered 429 for ${this.settings.label}: its daily quota is exhausted (other integrations may share it). Stopped with the checkpoint saved; requests resume after ${qd.resetsAt.toISOString()}.`,
      qd.resetsAt,
      'server',
    );
  }

  async snapshot(): Promise<QuotaSnapshot> {
    return (await quotaSnapshots(this.db, [this.settings], this.now()))[0]!;
  }
}

type UsageRow = SpentByPurpose & { used: number; exhausted_until: Date | null };

/** What a quota day's ledger row says, for a key's settings, at `now`. */
function snapshotOf(settings: QuotaSettings, now: Date, row: UsageRow | undefined): QuotaSnapshot {
  const qd = quotaDayOf(now, settings);
  const byPurpose = noneSpent();
  if (row) for (const p of PURPOSES) byPurpose[p] = row[p];
  const exhaustedUntil = row?.exhausted_until && row.exhausted_until > now ? row.exhausted_until : null;
  return {
    day: qd.day,
    used: row?.used ?? 0,
    byPurpose,
    dailyLimit: settings.dailyLimit,
    allowance: allowance(settings),
    budget: settings.budget,
    budgetUsed: byPurpose.check + byPurpose.webhook + byPurpose.full,
    exhaustedUntil,
    startsAt: qd.startsAt,
    resetsAt: qd.resetsAt,
  };
}

/**
 * The snapshots of many keys at once, in the order given, with one query: each
 * key on its own current quota day (keys may differ in time zone and reset hour).
 */
export async function quotaSnapshots(db: Queryable, settings: QuotaSettings[], now: Date): Promise<QuotaSnapshot[]> {
  if (settings.length === 0) return [];
  const days = settings.map((s) => quotaDayOf(now, s).day);
  const res = await db.query<UsageRow & { key_id: string; quota_day: string }>(
    `SELECT u.key_id, to_char(u.quota_day, 'YYYY-MM-DD') AS quota_day, u.used, u.used_check AS "check", u.used_backfill AS backfill,
            u.used_webhook AS webhook, u.used_resync AS resync, u.used_full AS "full", u.exhausted_until
     FROM pmsync.quota_usage u JOIN unnest($1::text[], $2::date[]) AS k(key_id, quota_day) ON u.key_id = k.key_id AND u.quota_day = k.quota_day`,
    [settings.map((s) => s.keyId), days],
  );
  const rows = new Map(res.rows.map((r) => [`${r.key_id} ${r.quota_day}`, r]));
  return settings.map((s, i) => snapshotOf(s, now, rows.get(`${s.keyId} ${days[i]}`)));
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Forgets a gateway key's ledger, every quota day of it (the demo resets its own key this way). */
export async function forgetKeyUsage(db: Queryable, keyId: string): Promise<void> {
  await db.query('DELETE FROM pmsync.quota_usage WHERE key_id = $1', [keyId]);
}

export interface DayRequests {
  /** YYYY-MM-DD label of the quota day. */
  day: string;
  requests: number;
}

/**
 * Requests counted for a gateway key on each of the `days` quota days up to
 * and including `lastDay`, oldest first; days with no request are 0.
 */
export async function requestsPerDay(db: Queryable, keyId: string, lastDay: string, days: number): Promise<DayRequests[]> {
  const res = await db.query<{ day: string; requests: number }>(
    `SELECT to_char(d, 'YYYY-MM-DD') AS day, coalesce(u.used, 0)::int AS requests
     FROM generate_series($2::date - ($3::int - 1), $2::date, interval '1 day') AS d
     LEFT JOIN pmsync.quota_usage u ON u.key_id = $1 AND u.quota_day = d::date
     ORDER BY d`,
    [keyId, lastDay, days],
  );
  return res.rows;
}
