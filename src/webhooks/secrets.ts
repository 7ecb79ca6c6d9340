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
 * expire after the source's grace period. The rows are read and written by
 * src/state/webhook-secrets.ts.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SecretRow } from '../state/webhook-secrets.ts';

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

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

export function isAccepted(row: SecretRow, now: Date): boolean {
  return row.expiresAt === null || row.expiresAt > now;
}

/** The registered token: activated and without expiry. */
export function isCurrent(row: SecretRow): boolean {
  return row.activatedAt !== null && row.expiresAt === null;
}
