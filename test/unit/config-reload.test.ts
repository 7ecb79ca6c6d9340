/**
 * Reloading the configuration: what differs between two configurations and
 * what of it needs a restart, and the reloader's decisions (hash, refusal,
 * one log line per outcome), on real files.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { Config } from '../../src/config/schema.ts';
import { describeChanges, diffConfig, hasChanges, keepRestartSettings } from '../../src/config/diff.ts';
import { createLogger } from '../../src/log.ts';
import { Redactor } from '../../src/redact.ts';
import { ConfigReloader, configInputHash } from '../../src/serve/reload.ts';

const KEY = 'file-key-7Qx2';

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'pmsync-reload-'));
}

/** A Core source of an account of its own (two sources reading one account are refused). */
function core(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    kind: 'core',
    baseUrl: `https://${name}.example.com/api/v1`,
    apikey: 'k-inline',
    username: 'u',
    password: 'p-inline',
    ...extra,
  };
}

function write(dir: string, config: unknown, name = 'pmsync.json'): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function load(dir: string, config: unknown): Config {
  return loadConfig(STREAM_REGISTRY, { configFile: write(dir, config, `c${Math.random()}.json`), env: {} });
}

describe('diffConfig', () => {
  const dir = folder();
  writeFileSync(join(dir, 'key'), KEY);
  const before = load(dir, {
    sources: [core('kept'), core('changed'), core('gone')],
    schedules: { tickSeconds: 15 },
    serve: { port: 8080 },
  });

  it('names sources added, removed and changed, and the settings that changed, never their values', () => {
    const after = load(dir, {
      sources: [core('kept'), core('changed', { apikey: { file: 'key' }, limiter: { maxConcurrent: 1 } }), core('new')],
      schedules: { tickSeconds: 5, overrides: [{ source: 'new', cron: '@daily' }] },
      serve: { port: 8080, reloadSeconds: 5 },
    });
    const changes = diffConfig(before, after);
    expect(changes).toEqual({
      added: ['new'],
      removed: ['gone'],
      changed: { changed: ['apikey', 'limiter'] },
      settings: ['serve.reloadSeconds', 'schedules.tickSeconds', 'schedules.overrides'],
      needsRestart: [],
    });
    expect(hasChanges(changes)).toBe(true);
    const line = describeChanges(changes);
    expect(line).toBe(
      'sources added: new; sources removed: gone; sources changed: changed (apikey, limiter); settings changed: serve.reloadSeconds, schedules.tickSeconds, schedules.overrides',
    );
    expect(JSON.stringify(changes)).not.toContain(KEY);
  });

  it('sees a budget given by schedules.budget as a change of every source it applies to', () => {
    const after = load(dir, { sources: [core('kept'), core('changed'), core('gone')], schedules: { tickSeconds: 15, budget: 50 } });
    expect(diffConfig(before, after)).toMatchObject({ changed: { kept: ['budget'], changed: ['budget'], gone: ['budget'] } });
  });

  it('keeps the running value of settings that need a restart, and says which', () => {
    const after = load(dir, {
      databaseUrl: 'postgres://elsewhere/db',
      sources: [core('kept'), core('changed'), core('gone')],
      schedules: { tickSeconds: 15, concurrency: 9, floorHours: 12 },
      serve: { port: 9999, host: '127.0.0.1' },
      webhooks: { concurrency: 5 },
    });
    const changes = diffConfig(before, after);
    expect(changes.needsRestart).toEqual(['databaseUrl', 'serve.port', 'serve.host', 'schedules.concurrency', 'webhooks.concurrency']);
    expect(changes.settings).toEqual(['schedules.floorHours']);
    const live = keepRestartSettings(before, after);
    expect(live.databaseUrl).toBeUndefined();
    expect(live.serve).toMatchObject({ port: 8080, host: '0.0.0.0' });
    expect(live.schedules).toMatchObject({ concurrency: before.schedules.concurrency, floorHours: 12 });
    expect(live.webhooks).toEqual(before.webhooks);
    expect(live.sources).toBe(after.sources);
  });

  it("keeps the status page's token until a restart when its file changes, naming it without its value", () => {
    const file = write(dir, { sources: [core('a')] }, 'token.json');
    const tokenFile = join(dir, 'status-token');
    const read = (token: string) => {
      writeFileSync(tokenFile, token);
      return loadConfig(STREAM_REGISTRY, { configFile: file, env: { PMSYNC_STATUS_TOKEN_FILE: tokenFile }, statusToken: true });
    };
    const running = read('first-token-0123456789');
    const next = read('second-token-0123456789');
    const changes = diffConfig(running, next);
    expect(changes.needsRestart).toEqual(['statusToken']);
    expect(hasChanges(changes)).toBe(false);
    expect(JSON.stringify(changes)).not.toContain('token-0123456789');
    expect(keepRestartSettings(running, next).statusToken).toBe('first-token-0123456789');
    expect(loadConfig(STREAM_REGISTRY, { configFile: file, env: { PMSYNC_STATUS_TOKEN_FILE: tokenFile } }).statusToken).toBeUndefined();
  });

  it('finds nothing in two loads of the same file', () => {
    const file = write(dir, { sources: [core('a', { apikey: { file: 'key' } })] }, 'same.json');
    const changes = diffConfig(
      loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }),
      loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }),
    );
    expect(hasChanges(changes)).toBe(false);
    expect(changes.needsRestart).toEqual([]);
  });
});

describe('ConfigReloader', () => {
  function rig(dir: string, initial: unknown) {
    const file = write(dir, initial);
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger(new Redactor(), {
      level: 'info',
      destination: new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
          done();
        },
      }),
    });
    let current = loadConfig(STREAM_REGISTRY, { configFile: file, env: {} });
    const applied: Config[] = [];
    let loads = 0;
    const reloader = new ConfigReloader({
      file,
      load: () => {
        loads += 1;
        return loadConfig(STREAM_REGISTRY, { configFile: file, env: {} });
      },
      current: () => current,
      apply: async (next) => {
        applied.push(next);
        current = next;
      },
      logger,
    });
    return { file, lines, applied, reloader, loads: () => loads, current: () => current };
  }

  it('reads the file only when it or a secret file it names changed, and applies it with one info line', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'key'), `${KEY}\n`);
    const r = rig(dir, { sources: [core('a')] });
    // The first look reads the file (it may have changed since start); nothing differs.
    expect(await r.reloader.check()).toBe('unchanged');
    expect(await r.reloader.check()).toBe('unchanged');
    expect(r.loads()).toBe(1);
    expect(r.lines).toEqual([]);

    write(dir, { sources: [core('a'), core('b', { apikey: { file: 'key' } })] });
    expect(await r.reloader.check()).toBe('applied');
    expect(r.current().sources.map((s) => s.name)).toEqual(['a', 'b']);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatchObject({ level: 'info', msg: 'config reloaded: sources added: b', added: ['b'], removed: [] });

    // A rotated secret file is a change of the file's sources, though the config file is the same.
    const hash = configInputHash(r.file);
    writeFileSync(join(dir, 'key'), 'rotated-key-2\n');
    expect(configInputHash(r.file)).not.toBe(hash);
    expect(await r.reloader.check()).toBe('applied');
    expect(r.lines[1]).toMatchObject({ msg: 'config reloaded: sources changed: b (apikey)' });
    expect(r.current().sources[1]).toMatchObject({ apikey: 'rotated-key-2' });

    // SIGHUP reads it whatever the hash, and says so when nothing changed.
    expect(await r.reloader.check({ force: true })).toBe('unchanged');
    expect(r.lines[2]).toMatchObject({ level: 'info', msg: 'config file read: no change to apply' });
    expect(JSON.stringify(r.lines)).not.toContain(KEY);
    rmSync(dir, { recursive: true });
  });

  it('refuses a file with problems whole, logging every problem in one error, once per version of the file', async () => {
    const dir = folder();
    const r = rig(dir, { sources: [core('a')] });
    write(dir, { sources: [core('a', { dailyQuotaa: 5 }), core('b', { apikey: { file: 'nowhere' }, baseUrl: 'http://remote/api/v1' })] });
    expect(await r.reloader.check()).toBe('refused');
    expect(await r.reloader.check()).toBe('unchanged');
    expect(r.applied).toEqual([]);
    expect(r.current().sources.map((s) => s.name)).toEqual(['a']);
    expect(r.lines).toHaveLength(1);
    const [line] = r.lines;
    expect(line).toMatchObject({
      level: 'error',
      msg: expect.stringMatching(/^config file refused \(3 problems\): the replica keeps running/),
    });
    expect(line!.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/sources\[0\]: unknown key "dailyQuotaa" \(did you mean "dailyQuota"\?\)/),
        expect.stringMatching(/sources\[1\]\.apikey: file .*nowhere does not exist/),
        expect.stringMatching(/source "b" \(sources\[1\]\): baseUrl is plain http:\/\//),
      ]),
    );
    // SIGHUP logs the problems again.
    expect(await r.reloader.check({ force: true })).toBe('refused');
    expect(r.lines).toHaveLength(2);
  });

  it('applies a valid file but warns once about the settings that need a restart', async () => {
    const dir = folder();
    const r = rig(dir, { sources: [core('a')] });
    write(dir, { sources: [core('a', { budget: 20 })], serve: { port: 9000 }, webhooks: { maxAttempts: 3 } });
    expect(await r.reloader.check()).toBe('applied');
    expect(r.current().serve.port).toBe(8080);
    expect(r.current().webhooks.maxAttempts).toBe(8);
    expect(r.current().sources[0]!.budget).toBe(20);
    expect(r.lines.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'config reloaded: sources changed: a (budget)'],
      [
        'warn',
        'config file: changes that need a restart to take effect (the running values are kept until then): serve.port; webhooks.maxAttempts',
      ],
    ]);
  });

  it('runs one look at a time; requests made meanwhile share the next one', async () => {
    const dir = folder();
    const r = rig(dir, { sources: [core('a')] });
    write(dir, { sources: [core('a'), core('b')] });
    const all = await Promise.all([r.reloader.check(), r.reloader.check(), r.reloader.check({ force: true }), r.reloader.check()]);
    expect(all).toEqual(['applied', 'unchanged', 'unchanged', 'unchanged']);
    // The first look, then one shared (forced) look for the three others.
    expect(r.loads()).toBe(2);
    expect(r.applied).toHaveLength(1);
  });
});
