import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { writeConfig } from '../support/cli.ts';
import { secretGraceSeconds } from '../../src/config/webhooks.ts';

const source = { name: 'clinic', kind: 'core', baseUrl: 'https://api.example.com/api/v1', apikey: 'k', username: 'u', password: 'p' };

describe('webhook settings', () => {
  it('default when the config file has none', () => {
    const config = loadConfig(STREAM_REGISTRY, { configFile: writeConfig({ sources: [source] }), env: {} });
    expect(config.webhooks).toEqual({
      refresh: 'auto',
      concurrency: 2,
      maxAttempts: 8,
      retryDelaySeconds: 30,
      expireSeconds: 300,
      eventRetentionDays: 7,
      maxBodyBytes: 65_536,
    });
    const core = config.sources[0]!;
    expect(core.kind === 'core' && secretGraceSeconds(core)).toBe(3600);
  });

  it('are validated with the rest of the configuration, every problem listed', () => {
    const file = writeConfig({
      sources: [{ ...source, webhook: { secretGraceSeconds: -1 } }],
      webhooks: { concurrency: 0, expireSeconds: 'soon' },
    });
    expect(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} })).toThrow(
      /webhooks\.concurrency[\s\S]*webhooks\.expireSeconds|webhooks\.expireSeconds[\s\S]*webhooks\.concurrency/,
    );
    expect(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} })).toThrow(/secretGraceSeconds/);
  });
});
