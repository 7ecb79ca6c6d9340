import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type SourceConfig } from '../../src/config/schema.ts';
import { ConfigError, HttpError, PmsyncError } from '../../src/errors.ts';
import { connectivityRequest, withAuthAdvice } from '../../src/sync/source-kinds.ts';
import { selectProStreams, selectRestStreams } from '../../src/sync/streams/index.ts';
import { writeConfig } from '../support/cli.ts';

function sources(list: unknown[]): SourceConfig[] {
  return loadConfig(STREAM_REGISTRY, { configFile: writeConfig({ sources: list }), env: {} }).sources;
}

function problems(list: unknown[]): string[] {
  try {
    sources(list);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const subset = {
  kind: 'subset',
  name: 'sub',
  baseUrl: 'https://api.example.com/CustomAPI/Glow/api/v1',
  apikey: 'k-123',
  username: 'u',
  password: 'p-123',
};
const core = { ...subset, kind: 'core', name: 'core', baseUrl: 'https://api.example.com/api/v1' };
const pro = { kind: 'pro', name: 'pro', baseUrl: 'https://pro.example.com', practiceId: 9, token: 'tok-123' };

describe('connectivity checks', () => {
  it('use GET /status for Core, one company for Subset (it has no status), one event type for Pro', () => {
    const [c, s, p] = sources([core, subset, pro]);
    expect(connectivityRequest(c!)).toEqual(['/status', {}]);
    expect(connectivityRequest(s!)).toEqual(['/companies', { Page: 1, Rows: 1 }]);
    expect(connectivityRequest(p!)).toEqual(['/practices/9/event-types', { Page: 1, Limit: 1 }]);
  });
});

describe('auth advice', () => {
  it('adds kind-specific advice to a 401 where it applies, and leaves other errors alone', () => {
    const [c, s, p] = sources([core, subset, pro]);
    const refused = new HttpError('AUTH_FAILED', 401, 'https://x', 'refused (401).', false);
    // On a Core source a 401 means the key or the user: the message already names both.
    expect(withAuthAdvice(c!, refused)).toBe(refused);
    expect((withAuthAdvice(s!, refused) as PmsyncError).message).toMatch(/a Core key is refused there\.$/);
    expect((withAuthAdvice(p!, refused) as PmsyncError).message).toMatch(/no "Bearer" word/);
    expect((withAuthAdvice(p!, refused) as PmsyncError).code).toBe('AUTH_FAILED');
    const other = new PmsyncError('NOT_FOUND', 'gone');
    expect(withAuthAdvice(s!, other)).toBe(other);
  });
});

describe('source configuration', () => {
  it('gives a Pro source its defaults', () => {
    const [p] = sources([pro]);
    expect(p).toMatchObject({
      pageLimit: 100,
      concurrency: 4,
      limiter: { maxConcurrent: 4 },
      waitlistIds: [],
      appointments: { fullSweepHours: 24 },
      availability: { horizonDays: 14, minIntervalMinutes: 60 },
    });
  });

  it('refuses a Bearer token, a Pro baseUrl with /practices, and a Subset URL under kind core, without echoing the token', () => {
    const list = problems([
      { ...pro, token: 'Bearer tok-secret-1' },
      { ...pro, name: 'pro2', baseUrl: 'https://pro.example.com/practices/9' },
      { ...subset, name: 'sub2', kind: 'core' },
    ]);
    expect(list).toEqual([
      'source "pro" (sources[0]): token is sent bare in the Authorization header: write the token alone, without a scheme word such as "Bearer"',
      'source "pro2" (sources[1]): a pro baseUrl stops before /practices: pmsync adds /practices/<practiceId> itself',
      'source "sub2" (sources[2]): this baseUrl is a Subset API path (/CustomAPI/...): set kind to "subset"',
    ]);
    expect(list.join(' ')).not.toContain('tok-secret-1');
    expect(problems([{ ...pro, token: 'token-abc' }])).toEqual([]);
  });

  it("selects a source's configured streams and refuses names its kind does not serve", () => {
    const [s, p] = sources([
      { ...subset, streams: ['orders', 'companies'] },
      { ...pro, streams: ['patients', 'appointments'] },
    ]);
    expect(selectRestStreams(s!).map((x) => x.resource)).toEqual(['companies', 'orders']);
    expect(selectProStreams(p as Extract<SourceConfig, { kind: 'pro' }>).map((x) => x.resource)).toEqual(['patients', 'appointments']);
    expect(() => selectRestStreams(s!, ['customers'])).toThrow(/has no resource "customers"/);
    expect(problems([{ ...pro, streams: ['patients', 'bookings'] }])).toEqual([
      expect.stringMatching(
        /sources\[0\]\.streams\[1\]: "bookings" is not a resource of the pro API \(known: patients, event-types, appointments, waitlist-slots, waitlist, availability\)$/,
      ),
    ]);
  });
});
