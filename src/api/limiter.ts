/**
 * One limiter per gateway key (concurrency and spacing). With a Redis URL the
 * limiters are Bottleneck limiters on its Redis datastore (ioredis), so
 * replicas on several machines share one limiter per key: its id is derived
 * from the key's fingerprint, and its settings live in Redis. Without one,
 * the limiter is a small in-process queue (LocalLimiter). The request
 * count itself is kept by the quota ledger in PostgreSQL, which every attempt
 * passes before it is sent.
 */
import Bottleneck from 'bottleneck';
import { PmsyncError } from '../errors.ts';
import { redactUrl } from '../redact.ts';

export interface LimiterSettings {
  maxConcurrent: number;
  minTimeMs: number;
}

export interface Limiter {
  schedule<T>(fn: () => Promise<T>): Promise<T>;
}

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
  private readonly limiters = new Map<string, { bottleneck: Bottleneck; ready: Promise<void> }>();
  private readonly locals = new Map<string, LocalLimiter>();
  private readonly redisUrl: string | undefined;

  constructor(redisUrl?: string) {
    this.redisUrl = redisUrl;
  }

  get(keyId: string, settings: LimiterSettings): Limiter {
    if (!this.redisUrl) {
      let local = this.locals.get(keyId);
      if (!local) {
        local = new LocalLimiter(settings);
        this.locals.set(keyId, local);
      }
      return local;
    }
    let entry = this.limiters.get(keyId);
    if (!entry) {
      const bottleneck = new Bottleneck({
        id: `pmsync-${keyId}`,
        maxConcurrent: settings.maxConcurrent,
        minTime: settings.minTimeMs,
        ...(this.redisUrl
          ? { datastore: 'ioredis', clearDatastore: false, clientOptions: redisOptions(this.redisUrl), timeout: REDIS_STATE_TTL_MS }
          : {}),
      });
      // Connection errors surface through `ready` below; ioredis keeps reconnecting meanwhile.
      bottleneck.on('error', () => undefined);
      entry = { bottleneck, ready: this.redisUrl ? this.whenReady(bottleneck, this.redisUrl) : Promise.resolve() };
      entry.ready.catch(() => undefined);
      this.limiters.set(keyId, entry);
    }
    const { bottleneck, ready } = entry;
    return {
      async schedule<T>(fn: () => Promise<T>): Promise<T> {
        await ready;
        return bottleneck.schedule(fn);
      },
    };
  }

  /** Resolves once Redis answers; the first connection error (or silence) before that is fatal. */
  private whenReady(bottleneck: Bottleneck, url: string): Promise<void> {
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

/** Where LocalLimiter reads the time and waits; tests pass one they move by hand. */
export interface LimiterClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: LimiterClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * The limiter of a single process: at most maxConcurrent jobs at once, their
 * starts at least minTimeMs apart, in arrival order. Bottleneck's in-memory
 * datastore is not used because it yields to the event loop with setTimeout
 * several times per job: about 5 ms of idle time per request, which on a fast
 * API cost more than the request itself (half of a sync's time, see
 * bench/RESULTS.md).
 */
export class LocalLimiter implements Limiter {
  private readonly settings: LimiterSettings;
  private readonly clock: LimiterClock;
  private running = 0;
  private nextStart = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(settings: LimiterSettings, clock: LimiterClock = REAL_CLOCK) {
    this.settings = settings;
    this.clock = clock;
  }

  async schedule<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running < this.settings.maxConcurrent) this.running++;
    // A finishing job hands its slot straight to the next waiter, so no newcomer can take it in between.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      if (this.settings.minTimeMs > 0) {
        const now = this.clock.now();
        const start = Math.max(now, this.nextStart);
        this.nextStart = start + this.settings.minTimeMs;
        if (start > now) await this.clock.sleep(start - now);
      }
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
