/**
 * pmsync.webhook_secrets: the hashes of webhook URL tokens and their
 * lifecycle (src/webhooks/secrets.ts explains it). Only hashes are stored.
 */
import type { Queryable } from '../db/pool.ts';

/** A provisional token left by an interrupted registration stops being accepted after this long. */
export const PROVISIONAL_TTL_MS = 86_400_000;

export interface SecretRow {
  hash: string;
  activatedAt: Date | null;
  expiresAt: Date | null;
}

export async function loadSecrets(db: Queryable, source: string): Promise<SecretRow[]> {
  const res = await db.query<{ token_hash: string; activated_at: Date | null; expires_at: Date | null }>(
    'SELECT token_hash, activated_at, expires_at FROM pmsync.webhook_secrets WHERE source = $1 ORDER BY created_at',
    [source],
  );
  return res.rows.map((r) => ({ hash: r.token_hash, activatedAt: r.activated_at, expiresAt: r.expires_at }));
}

export async function addProvisionalSecret(db: Queryable, source: string, hash: string, now: Date): Promise<void> {
  await db.query('INSERT INTO pmsync.webhook_secrets (source, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)', [
    source,
    hash,
    now,
    new Date(now.getTime() + PROVISIONAL_TTL_MS),
  ]);
}

/** Makes `hash` the current token; every other token of the source expires at `graceUntil` at the latest. */
export async function activateSecret(db: Queryable, source: string, hash: string, now: Date, graceUntil: Date): Promise<void> {
  await db.query(
    `UPDATE pmsync.webhook_secrets SET expires_at = $3
     WHERE source = $1 AND token_hash <> $2 AND (expires_at IS NULL OR expires_at > $3)`,
    [source, hash, graceUntil],
  );
  await db.query('UPDATE pmsync.webhook_secrets SET activated_at = $3, expires_at = NULL WHERE source = $1 AND token_hash = $2', [
    source,
    hash,
    now,
  ]);
}

/** Every token of the source stops being accepted at `at` (or earlier, if it already would). */
export async function expireSecrets(db: Queryable, source: string, at: Date): Promise<void> {
  await db.query('UPDATE pmsync.webhook_secrets SET expires_at = $2 WHERE source = $1 AND (expires_at IS NULL OR expires_at > $2)', [
    source,
    at,
  ]);
}

/** Of these sources, the ones with webhooks registered: a token activated and not expired at `now`. */
export async function sourcesWithWebhooks(db: Queryable, sources: string[], now: Date): Promise<Set<string>> {
  const res = await db.query<{ source: string }>(
    `SELECT DISTINCT source FROM pmsync.webhook_secrets
     WHERE source = ANY($1::text[]) AND activated_at IS NOT NULL AND (expires_at IS NULL OR expires_at > $2)`,
    [sources, now],
  );
  return new Set(res.rows.map((r) => r.source));
}

/**
 * Of these sources, those with webhooks registered at `at`, and until when:
 * the latest expiry of a token activated and not expired at `at`
 * (Infinity when one never expires).
 */
export async function webhooksUntilOf(db: Queryable, sources: readonly string[], at: Date): Promise<Map<string, number>> {
  const res = await db.query<{ source: string; until: Date | null; open: boolean }>(
    `SELECT source, max(expires_at) AS until, bool_or(expires_at IS NULL) AS open FROM pmsync.webhook_secrets
     WHERE source = ANY($1::text[]) AND activated_at IS NOT NULL AND (expires_at IS NULL OR expires_at > $2)
     GROUP BY source`,
    [sources, at],
  );
  return new Map(res.rows.map((r) => [r.source, r.open || !r.until ? Number.POSITIVE_INFINITY : r.until.getTime()]));
}
