/**
 * One Bottleneck limiter per gateway key (concurrency and spacing). Without a
 * Redis URL it keeps its state in the process (Bottleneck's local datastore).
 * With one, the state lives in Redis (ioredis datastore), so replicas on
 * several machines share one limiter per key: its id is derived from the
 * key's fingerprint. The request count itself is kept by the quota ledger in
 * PostgreSQL, which every attempt passes before it is sent.
 */
import Bottleneck from 'bottleneck';
// @ts-expect-error Bottleneck ships no types for its internal modules.
import LocalDatastore from 'bottleneck/lib/LocalDatastore.js';
import { PmsyncError } from '../errors.ts';
import { redactUrl } from '../redact.ts';

export interface LimiterSettings {
  maxConcurrent: number;
  minTimeMs: number;
}

export interface Limiter {
  schedule<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Bottleneck's in-process datastore yields to the event loop with
 * `setTimeout(resolve, 0)` several times per job, and Node clamps each of
 * those to a millisecond or more: about 5 ms of idle time per request. A
 * zero-delay yield does not need a timer; setImmediate yields the same way
 * without the clamp. Yields with a delay keep their timer.
 */
(LocalDatastore as { prototype: { yieldLoop: (t?: number) => Promise<void>; Promise: PromiseConstructor } }).prototype.yieldLoop =
  function yieldLoop(this: { Promise: PromiseConstructor }, t = 0): Promise<void> {
    return new this.Promise((resolve) => (t > 0 ? setTimeout(resolve, t) : setImmediate(resolve)));
  };

/** How long to wait for Redis before saying it cannot be reached. */
const REDIS_READY_TIMEOUT_MS = 10_000;
/** Limiter state left in Redis by replicas that stopped expires after this much inactivity. */
const REDIS_STATE_TTL_MS = 10 * 60_000;

/** ioredis connection options from a redis:// or rediss:// URL. */
export function redisOptions(url: string): Record<string, unknown> {
  const u = new URL(url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new PmsyncError('CONFIG_INVALID', `REDIS_URL must start with redis:// or rediss:// (got ${redactUrl(url)})`);
  }
  const db = u.pathname.replace(/^\//, '');
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    connectTimeout: 5_000,
  };
}

export class LimiterRegistry {
  private readonly limiters = new Map<string, { bottleneck: Bottleneck; limiter: Limiter; settings: LimiterSettings }>();
  private readonly redisUrl: string | undefined;

  constructor(redisUrl?: string) {
    this.redisUrl = redisUrl;
  }

  /** The limiter of one gateway key; every caller with that key gets the same one. */
  get(keyId: string, settings: LimiterSettings): Limiter {
    let entry = this.limiters.get(keyId);
    if (!entry) {
      entry = this.create(keyId, settings);
      this.limiters.set(keyId, entry);
    }
    return entry.limiter;
  }

  /**
   * New settings for the limiter of a key, if it exists (a reloaded
   * configuration): requests already waiting keep their place.
   */
  update(keyId: string, settings: LimiterSettings): void {
    const entry = this.limiters.get(keyId);
    if (!entry || (entry.settings.maxConcurrent === settings.maxConcurrent && entry.settings.minTimeMs === settings.minTimeMs)) return;
    entry.settings = { ...settings };
    entry.bottleneck.updateSettings({ maxConcurrent: settings.maxConcurrent, minTime: settings.minTimeMs });
  }

  private create(keyId: string, settings: LimiterSettings): { bottleneck: Bottleneck; limiter: Limiter; settings: LimiterSettings } {
    const redisUrl = this.redisUrl;
    const bottleneck = new Bottleneck({
      id: `pmsync-${keyId}`,
      maxConcurrent: settings.maxConcurrent,
      minTime: settings.minTimeMs,
      ...(redisUrl
        ? { datastore: 'ioredis', clearDatastore: false, clientOptions: redisOptions(redisUrl), timeout: REDIS_STATE_TTL_MS }
        : { datastore: 'local' }),
    });
    // Connection errors surface through `ready` below; ioredis keeps reconnecting meanwhile.
    bottleneck.on('error', () => undefined);
    const ready = redisUrl ? whenRedisReady(bottleneck, redisUrl) : Promise.resolve();
    ready.catch(() => undefined);
    const limiter: Limiter = {
      async schedule<T>(fn: () => Promise<T>): Promise<T> {
        await ready;
        return bottleneck.schedule(fn);
      },
    };
    return { bottleneck, limiter, settings: { ...settings } };
  }

  async close(): Promise<void> {
    const all = [...this.limiters.values()];
    this.limiters.clear();
    // A Redis that went away must not hold the process open.
    await Promise.all(
      all.map(({ bottleneck }) =>
        Promise.race([bottleneck.disconnect(true), new Promise((r) => setTimeout(r, 2_000).unref())]).catch(() => undefined),
      ),
    );
  }
}

/** Resolves once Redis answers; the first connection error (or silence) before that is fatal. */
function whenRedisReady(bottleneck: Bottleneck, url: string): Promise<void> {
  const unreachable = (detail: string) =>
    new PmsyncError(
      'REDIS_UNREACHABLE',
      `Cannot reach Redis at ${redactUrl(url)} (REDIS_URL): ${detail}. It holds the request limiter shared by replicas.`,
    );
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  const failure = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unreachable(`no answer within ${REDIS_READY_TIMEOUT_MS / 1000}s`)), REDIS_READY_TIMEOUT_MS);
    bottleneck.on('error', (err: Error) => {
      if (!settled) reject(unreachable(err?.message || String(err)));
    });
  });
  return Promise.race([bottleneck.ready().then(() => undefined), failure]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}
