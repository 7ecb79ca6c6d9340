/**
 * Readiness: the database answers and every migration this build ships is
 * applied. Liveness (/healthz) needs nothing but the process itself.
 */
import type { Queryable } from '../db/pool.ts';
import { appliedMigrations, readMigrations } from '../db/migrate.ts';

export interface Readiness {
  ready: boolean;
  problems: string[];
}

/** A readiness probe must answer quickly even when the database hangs. */
export const READY_TIMEOUT_MS = 2_000;

export function readinessCheck(db: Queryable, expected: string[] = readMigrations().map((m) => m.name)): () => Promise<Readiness> {
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
    });
    try {
      const res = await Promise.race([appliedMigrations(db), timeout]);
      const missing = expected.filter((m) => !res.has(m));
      return missing.length === 0
        ? { ready: true, problems: [] }
        : { ready: false, problems: [`migrations not applied: ${missing.join(', ')} (run "pmsync migrate")`] };
    } catch (err) {
      return { ready: false, problems: [`database unreachable: ${(err as Error).message}`] };
    } finally {
      clearTimeout(timer);
    }
  };
}
