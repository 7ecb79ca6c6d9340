/**
 * One Bottleneck limiter per gateway key (concurrency and spacing). With a
 * Redis URL the limiters use Bottleneck's Redis datastore, so replicas on
 * several machines share them. The request count itself is kept by the quota
 * ledger in PostgreSQL, which every attempt passes before it is sent.
 */
import Bottleneck from 'bottleneck';

export interface LimiterSettings {
  maxConcurrent: number;
  minTimeMs: number;
}

export class LimiterRegistry {
  private readonly limiters = new Map<string, Bottleneck>();
  private readonly redisUrl: string | undefined;

  constructor(redisUrl?: string) {
    this.redisUrl = redisUrl;
  }

  get(keyId: string, settings: LimiterSettings): Bottleneck {
    let limiter = this.limiters.get(keyId);
    if (!limiter) {
      limiter = new Bottleneck({
        id: `pmsync-${keyId}`,
        maxConcurrent: settings.maxConcurrent,
        minTime: settings.minTimeMs,
        ...(this.redisUrl
          ? { datastore: 'ioredis', clearDatastore: false, clientOptions: this.redisUrl, timeout: 60_000 }
          : {}),
      });
      limiter.on('error', () => undefined);
      this.limiters.set(keyId, limiter);
    }
    return limiter;
  }

  async close(): Promise<void> {
    await Promise.all([...this.limiters.values()].map((l) => l.disconnect(true)));
    this.limiters.clear();
  }
}
