/**
 * Secret tokens of webhook URLs. The spec shows no delivery signature, so the
 * URL pmsync registers carries a random token (its last path segment) and a
 * delivery is accepted only on a URL with a valid token.
 *
 * Only the SHA-256 hash of a token is stored. A token has 256 random bits, so
 * a fast hash is enough: there is nothing to guess. Verification hashes the
 * presented token and compares hashes in constant time.
 *
 * Lifecycle (pmsync.webhook_secrets): a new token is first provisional
 * (activated_at NULL, expires_at a day away), so deliveries to the URLs being
 * registered are already accepted; once its registrations exist it becomes the
 * current one (activated_at set, expires_at NULL) and the tokens before it
 * expire after the source's grace period.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** A provisional token left by an interrupted registration stops being accepted after this long. */
export const PROVISIONAL_TTL_MS = 86_400_000;

export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time check of a presented token against stored hashes (every hash is compared). */
export function tokenMatches(token: string, hashes: readonly string[]): boolean {
  const presented = createHash('sha256').update(token, 'utf8').digest();
  let ok = false;
  for (const h of hashes) {
    const stored = Buffer.from(h, 'hex');
    if (stored.length === presented.length && timingSafeEqual(stored, presented)) ok = true;
  }
  return ok;
}

export interface SecretRow {
  hash: string;
  activatedAt: Date | null;
  expiresAt: Date | null;
}

export function isAccepted(row: SecretRow, now: Date): boolean {
  return row.expiresAt === null || row.expiresAt > now;
}

/** The registered token: activated and without expiry. */
export function isCurrent(row: SecretRow): boolean {
  return row.activatedAt !== null && row.expiresAt === null;
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
