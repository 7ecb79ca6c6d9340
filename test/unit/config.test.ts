import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';

const goodEnv = {
  CORE_BASE_URL: 'https://api.example.com/api/v1',
  CORE_APIKEY: 'key-abc',
  CORE_USERNAME: 'sync-user',
  CORE_PASSWORD: 'pw-xyz',
};

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('builds one Core source from CORE_* variables with documented defaults', () => {
    const c = loadConfig({ env: goodEnv });
    expect(c.databaseUrl).toBeUndefined();
    expect(c.sources).toHaveLength(1);
    expect(c.sources[0]).toMatchObject({
      kind: 'core',
      name: 'core',
      dailyQuota: 1000,
      timeZone: 'UTC',
      overlapSeconds: 600,
      lagSeconds: 60,
    });
  });

  it('lists every problem at once, naming the variables, without echoing secrets', () => {
    const list = problems(() =>
      loadConfig({
        env: {
          CORE_BASE_URL: 'http://api.example.com/v2',
          CORE_APIKEY: 'key-abc',
          CORE_USERNAME: 'a:b',
          CORE_DAILY_QUOTA: '-5',
          DATABASE_URL: 'mysql://x',
        },
      }),
    );
    const text = list.join('\n');
    expect(text).toMatch(/CORE_PASSWORD/);
    expect(text).toMatch(/CORE_DAILY_QUOTA/);
    expect(list.length).toBeGreaterThanOrEqual(3);
    expect(text).not.toContain('key-abc');
  });

  it('refuses plain http except for loopback hosts, and a username with a colon', () => {
    const list = problems(() => loadConfig({ env: { ...goodEnv, CORE_BASE_URL: 'http://api.example.com/api/v1', CORE_USERNAME: 'a:b' } }));
    expect(list.join('\n')).toMatch(/https/);
    expect(list.join('\n')).toMatch(/must not contain ":"/);
    expect(loadConfig({ env: { ...goodEnv, CORE_BASE_URL: 'http://127.0.0.1:4010/api/v1' } }).sources).toHaveLength(1);
  });

  it('reads several sources from a file, resolving {env} secrets', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(
      file,
      JSON.stringify({
        sources: [
          {
            name: 'clinic-a',
            kind: 'core',
            baseUrl: 'https://h/api/v1',
            apikey: { env: 'A_KEY' },
            username: 'u',
            password: { env: 'A_PW' },
          },
          {
            name: 'clinic-b',
            kind: 'subset',
            baseUrl: 'https://h/CustomAPI/ACME/api/v1',
            apikey: 'k2',
            username: 'u2',
            password: 'p2',
            dailyQuota: 2500,
          },
          { name: 'pro-1', kind: 'pro', baseUrl: 'https://pro.example.com', practiceId: 7, token: { env: 'PRO_TOKEN' } },
        ],
      }),
    );
    const c = loadConfig({ configFile: file, env: { A_KEY: 'ka', A_PW: 'pa', PRO_TOKEN: 'tok' } });
    expect(c.sources.map((s) => s.name)).toEqual(['clinic-a', 'clinic-b', 'pro-1']);
    expect(c.sources[0]).toMatchObject({ apikey: 'ka', password: 'pa' });
    expect(c.sources[2]).toMatchObject({ token: 'tok', practiceId: 7 });
  });

  it('reports missing env secrets, bad kinds and duplicate names together', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(
      file,
      JSON.stringify({
        sources: [
          { name: 'a', kind: 'core', baseUrl: 'https://h/api/v1', apikey: { env: 'MISSING' }, username: 'u', password: 'p' },
          { name: 'a', kind: 'core', baseUrl: 'https://h/api/v1', apikey: 'k', username: 'u', password: 'p' },
        ],
      }),
    );
    const list = problems(() => loadConfig({ configFile: file, env: {} }));
    expect(list.join('\n')).toMatch(/MISSING is not set/);
    expect(list.join('\n')).toMatch(/used twice/);
    const bad = problems(() => loadConfig({ configFile: join(dir, 'nope.json'), env: {} }));
    expect(bad[0]).toMatch(/nope\.json/);
  });
});
