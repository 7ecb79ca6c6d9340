import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { configProblems as problems } from '../support/config-problems.ts';

const goodEnv = {
  CORE_BASE_URL: 'https://api.example.com/api/v1',
  CORE_APIKEY: 'key-abc',
  CORE_USERNAME: 'sync-user',
  CORE_PASSWORD: 'pw-xyz',
};

describe('loadConfig', () => {
  it('builds one Core source from CORE_* variables with documented defaults', () => {
    const c = loadConfig(STREAM_REGISTRY, { env: goodEnv });
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
      loadConfig(STREAM_REGISTRY, {
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
    const list = problems(() =>
      loadConfig(STREAM_REGISTRY, { env: { ...goodEnv, CORE_BASE_URL: 'http://api.example.com/api/v1', CORE_USERNAME: 'a:b' } }),
    );
    expect(list.join('\n')).toMatch(
      /baseUrl is plain http:\/\/ to api\.example\.com: .* Use https:\/\/, or, .* set CORE_ALLOW_INSECURE_HTTP=true/,
    );
    expect(list.join('\n')).toMatch(/must not contain ":"/);
    for (const host of ['127.0.0.1:4010', 'localhost', '[::1]:4010'])
      expect(loadConfig(STREAM_REGISTRY, { env: { ...goodEnv, CORE_BASE_URL: `http://${host}/api/v1` } }).sources).toHaveLength(1);
    expect(problems(() => loadConfig(STREAM_REGISTRY, { env: { ...goodEnv, CORE_BASE_URL: 'ftp://api.example.com/api/v1' } }))).toEqual([
      'source "core" (CORE_* environment variables): baseUrl must use https://',
    ]);
  });

  it('accepts plain http to another machine only for a source that says so, in a file or through CORE_ALLOW_INSECURE_HTTP', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const file = join(dir, 'c.json');
    const source = { name: 'clinic', kind: 'core', baseUrl: 'http://10.0.0.5/api/v1', apikey: 'k1', username: 'u', password: 'p1' };
    const pro = { name: 'pro', kind: 'pro', baseUrl: 'http://10.0.0.6/v1', practiceId: 1, token: 't1' };
    writeFileSync(file, JSON.stringify({ sources: [source, pro] }));
    expect(problems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }))).toEqual([
      expect.stringMatching(
        /^source "clinic" \(sources\[0\]\): baseUrl is plain http:\/\/ to 10\.0\.0\.5: .*set "allowInsecureHttp": true on this source$/,
      ),
      expect.stringMatching(/^source "pro" \(sources\[1\]\): baseUrl is plain http:\/\/ to 10\.0\.0\.6: /),
    ]);
    writeFileSync(
      file,
      JSON.stringify({
        sources: [
          { ...source, allowInsecureHttp: true },
          { ...pro, allowInsecureHttp: true },
        ],
      }),
    );
    expect(loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }).sources.map((s) => s.allowInsecureHttp)).toEqual([true, true]);
    writeFileSync(file, JSON.stringify({ sources: [{ ...source, allowInsecureHttp: 'yes' }] }));
    expect(problems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }))).toEqual([
      expect.stringMatching(/sources\[0\]\.allowInsecureHttp: /),
      expect.stringMatching(/baseUrl is plain http:\/\//),
    ]);

    const env = { ...goodEnv, CORE_BASE_URL: 'http://10.0.0.5/api/v1' };
    expect(loadConfig(STREAM_REGISTRY, { env: { ...env, CORE_ALLOW_INSECURE_HTTP: 'true' } }).sources[0]!.allowInsecureHttp).toBe(true);
    expect(problems(() => loadConfig(STREAM_REGISTRY, { env: { ...env, CORE_ALLOW_INSECURE_HTTP: 'false' } }))).toEqual([
      expect.stringMatching(/baseUrl is plain http:\/\//),
    ]);
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
    const c = loadConfig(STREAM_REGISTRY, { configFile: file, env: { A_KEY: 'ka', A_PW: 'pa', PRO_TOKEN: 'tok' } });
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
    const list = problems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }));
    expect(list.join('\n')).toMatch(/MISSING is not set/);
    expect(list.join('\n')).toMatch(/used twice/);
    const bad = problems(() => loadConfig(STREAM_REGISTRY, { configFile: join(dir, 'nope.json'), env: {} }));
    expect(bad[0]).toMatch(/nope\.json/);
  });
});

describe('strict configuration', () => {
  function file(config: unknown): string {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify(config));
    return path;
  }
  const core = { name: 'clinic', kind: 'core', baseUrl: 'https://h/api/v1', apikey: 'k', username: 'u', password: 'p' };
  const pro = { name: 'pro-1', kind: 'pro', baseUrl: 'https://pro.example.com', practiceId: 7, token: 't' };

  it('refuses unknown keys at every level, naming the closest known key, all in one error', () => {
    const list = problems(() =>
      loadConfig(STREAM_REGISTRY, {
        configFile: file({
          databaseUrll: 'postgres://x/y',
          sources: [
            { ...core, dailyQuotaa: 500, quota: { reservePercnt: 5 }, retry: { maxAttempt: 3 }, apikey: { env: 'K', fallback: 'x' } },
            { ...pro, limiter: { maxConcurent: 2 }, availability: { horizon: 3 } },
          ],
          schedules: { incremental: '*/5 * * * *', catchup: false, overrides: [{ resource: 'customers', cron: 'off', timezone: 'UTC' }] },
          serve: { prot: 9000 },
          webhooks: { maxBodyBytez: 2048 },
        }),
        env: { K: 'key' },
      }),
    );
    expect(list).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/: \(root\): unknown key "databaseUrll" \(did you mean "databaseUrl"\?\)$/),
        expect.stringMatching(/: sources\[0\]: unknown key "dailyQuotaa" \(did you mean "dailyQuota"\?\)$/),
        expect.stringMatching(/: sources\[0\]\.quota: unknown key "reservePercnt" \(did you mean "reservePercent"\?\)$/),
        expect.stringMatching(/: sources\[0\]\.retry: unknown key "maxAttempt" \(did you mean "maxAttempts"\?\)$/),
        expect.stringMatching(/: sources\[0\]\.apikey: .*unknown key "fallback"/),
        expect.stringMatching(/: sources\[1\]\.limiter: unknown key "maxConcurent" \(did you mean "maxConcurrent"\?\)$/),
        expect.stringMatching(/: sources\[1\]\.availability: unknown key "horizon" \(did you mean "horizonDays"\?\)$/),
        expect.stringMatching(/: schedules: unknown key "catchup" \(did you mean "catchUp"\?\)$/),
        expect.stringMatching(/: schedules\.overrides\.0: unknown key "timezone" \(did you mean "timeZone"\?\)$/),
        expect.stringMatching(/: serve: unknown key "prot" \(did you mean "port"\?\)$/),
        expect.stringMatching(/: webhooks: unknown key "maxBodyBytez" \(did you mean "maxBodyBytes"\?\)$/),
      ]),
    );
  });

  it('a typo never leaves a default silently in force', () => {
    expect(() => loadConfig(STREAM_REGISTRY, { configFile: file({ sources: [{ ...core, dailyQuotaa: 500 }] }), env: {} })).toThrow(
      /dailyQuotaa.*did you mean "dailyQuota"/,
    );
    expect(
      loadConfig(STREAM_REGISTRY, { configFile: file({ sources: [{ ...core, dailyQuota: 500 }] }), env: {} }).sources[0],
    ).toMatchObject({
      dailyQuota: 500,
    });
  });

  it('checks the resources named by streams, fullRefresh and schedule overrides, with the other problems', () => {
    const list = problems(() =>
      loadConfig(STREAM_REGISTRY, {
        configFile: file({
          sources: [
            { ...core, fullRefresh: ['giftcertificate'], lagSeconds: -1 },
            { ...core, name: 'uptown', streams: ['orders', 'ordrs'] },
            { ...pro, streams: ['patient'] },
          ],
          schedules: {
            overrides: [
              { source: 'clinc', cron: 'off' },
              { source: 'uptown', resource: 'customers', cron: 'off' },
              { resource: 'appointmnts', cron: 'off' },
            ],
          },
        }),
        env: {},
      }),
    );
    expect(list).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/sources\[0\]\.lagSeconds: Too small/),
        expect.stringMatching(/sources\[1\]\.streams\[1\]: "ordrs" is not a resource of the core API \(did you mean "orders"\?\)$/),
        expect.stringMatching(
          /sources\[0\]\.fullRefresh\[0\]: "giftcertificate" is not a resource of the core API \(did you mean "giftcertificates"\?\)$/,
        ),
        expect.stringMatching(/sources\[2\]\.streams\[0\]: "patient" is not a resource of the pro API \(did you mean "patients"\?\)$/),
        expect.stringMatching(/schedules\.overrides\[0\]\.source: no source named "clinc" \(did you mean "clinic"\?\)$/),
        expect.stringMatching(/schedules\.overrides\[1\]\.resource: source "uptown" reads no resource "customers" \(known: orders\)$/),
        expect.stringMatching(
          /schedules\.overrides\[2\]\.resource: no configured source reads a resource "appointmnts" \(did you mean "appointments"\?\)$/,
        ),
      ]),
    );
  });

  it('accepts every documented key', () => {
    const c = loadConfig(STREAM_REGISTRY, {
      configFile: file({
        databaseUrl: 'postgres://u@h/db',
        sources: [
          {
            ...core,
            credentialsIn: 'query',
            dailyQuota: 2500,
            quota: { reservePercent: 5, timeZone: 'UTC', resetHour: 1 },
            limiter: { maxConcurrent: 2, minTimeMs: 0 },
            retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1000, maxElapsedMs: 5000 },
            timeZone: 'Europe/Berlin',
            overlapSeconds: 60,
            lagSeconds: 0,
            requestTimeoutMs: 5000,
            maxResponseBytes: 1048576,
            streams: ['customers', 'orders'],
            fullRefresh: ['orders'],
            appointments: { historyStart: '2010-01-01', horizonDays: 30 },
            webhook: { tenantId: 't', secretGraceSeconds: 60 },
            privacy: { columns: { 'customers.email': 'hash', 'customers.raw.Notes': 'drop' }, raw: 'declared' },
          },
          {
            ...pro,
            pageLimit: 50,
            concurrency: 2,
            limiter: { maxConcurrent: 2, minTimeMs: 0 },
            requestTimeoutMs: 5000,
            maxResponseBytes: 1048576,
            streams: ['patients'],
            appointments: { fullSweepHours: 12 },
            waitlistIds: [1],
            availability: { horizonDays: 7, minIntervalMinutes: 30 },
            privacy: { columns: 'personal:drop' },
          },
        ],
        privacy: { key: 'k'.repeat(32), columns: { personal: 'keep' }, raw: 'all' },
        schedules: {
          incremental: '*/5 * * * *',
          full: 'off',
          catchUp: false,
          overrides: [{ source: 'clinic', resource: 'orders', cron: '0 3 * * *', timeZone: 'UTC' }],
        },
        serve: { port: 9000, host: '127.0.0.1', shutdownTimeoutSeconds: 10, lockWaitSeconds: 5 },
        webhooks: { concurrency: 1, maxAttempts: 3, retryDelaySeconds: 5, expireSeconds: 60, eventRetentionDays: 1, maxBodyBytes: 2048 },
      }),
      env: {},
    });
    expect(c.sources.map((s) => s.name)).toEqual(['clinic', 'pro-1']);
  });
});

describe('where sources come from', () => {
  function file(config: unknown): string {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify(config));
    return path;
  }
  const clinic = {
    name: 'clinic',
    kind: 'core',
    baseUrl: 'https://api.example.com/api/v1',
    apikey: 'key-abc',
    username: 'u',
    password: 'p',
  };

  it('with a config file, CORE_* variables add no source, even with another dailyQuota or the same name', () => {
    for (const extra of [{}, { CORE_DAILY_QUOTA: '5000' }, { CORE_SOURCE_NAME: 'clinic' }]) {
      const c = loadConfig(STREAM_REGISTRY, { configFile: file({ sources: [clinic] }), env: { ...goodEnv, ...extra } });
      expect(c.sources.map((s) => s.name)).toEqual(['clinic']);
    }
    expect(
      loadConfig(STREAM_REGISTRY, { env: { ...goodEnv, PMSYNC_CONFIG: file({ sources: [clinic] }) } }).sources.map((s) => s.name),
    ).toEqual(['clinic']);
  });

  it('a config file may read CORE_* variables by name without the others being set', () => {
    const c = loadConfig(STREAM_REGISTRY, {
      configFile: file({ sources: [{ ...clinic, apikey: { env: 'CORE_APIKEY' }, password: { env: 'CORE_PASSWORD' } }] }),
      env: { CORE_APIKEY: 'key-from-env', CORE_PASSWORD: 'pw-from-env' },
    });
    expect(c.sources[0]).toMatchObject({ name: 'clinic', apikey: 'key-from-env', password: 'pw-from-env' });
  });

  it('refuses two sources reading the same account, naming both, unless their streams are disjoint', () => {
    const same = problems(() =>
      loadConfig(STREAM_REGISTRY, {
        configFile: file({
          sources: [clinic, { ...clinic, name: 'again', baseUrl: 'https://API.example.com/api/v1/', username: 'other' }],
        }),
        env: {},
      }),
    );
    expect(same).toEqual([
      expect.stringMatching(
        /^source "clinic" \(sources\[0\]\) and source "again" \(sources\[1\]\) read the same account \(https:\/\/api\.example\.com\/api\/v1 with the same gateway key\): both would fetch and store companies, .*Keep one of them, or give both a "streams" list with no resource in common$/,
      ),
    ]);
    const overlapping = problems(() =>
      loadConfig(STREAM_REGISTRY, {
        configFile: file({
          sources: [
            { ...clinic, streams: ['customers', 'orders'] },
            { ...clinic, name: 'again', streams: ['orders', 'appointments'] },
          ],
        }),
        env: {},
      }),
    );
    expect(overlapping).toEqual([expect.stringMatching(/read the same account .*both would fetch and store orders, each record twice/)]);
    const split = loadConfig(STREAM_REGISTRY, {
      configFile: file({
        sources: [
          { ...clinic, streams: ['customers'] },
          { ...clinic, name: 'again', streams: ['orders'] },
        ],
      }),
      env: {},
    });
    expect(split.sources.map((s) => s.name)).toEqual(['clinic', 'again']);
    const otherKey = loadConfig(STREAM_REGISTRY, {
      configFile: file({ sources: [clinic, { ...clinic, name: 'other', apikey: 'key-xyz' }] }),
      env: {},
    });
    expect(otherKey.sources).toHaveLength(2);
  });

  it('without a config file, the CORE_* source is named by its variables in messages', () => {
    const list = problems(() =>
      loadConfig(STREAM_REGISTRY, { env: { ...goodEnv, CORE_BASE_URL: 'https://api.example.com/CustomAPI/X/api/v1' } }),
    );
    expect(list).toEqual([expect.stringMatching(/^source "core" \(CORE_\* environment variables\): this baseUrl is a Subset API path/)]);
  });
});

describe('every problem at once', () => {
  function file(config: unknown): string {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-cfg-'));
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify(config));
    return path;
  }

  it('lists problems of the top level, the sources, schedules, overrides, webhooks and the environment together', () => {
    const list = problems(() =>
      loadConfig(STREAM_REGISTRY, {
        configFile: file({
          colour: 'blue',
          sources: [
            { name: 'clinic', kind: 'core', baseUrl: 'https://h/api/v1', apikey: 'k', username: 'u', password: 'p', lagSeconds: -1 },
          ],
          schedules: { budget: 'lots', overrides: [{ source: 'clinik', cron: 'off' }] },
          webhooks: { concurrency: 0 },
        }),
        env: { LOG_LEVEL: 'verbose', DATABASE_URL: 'mysql://x' },
      }),
    );
    expect(list).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/\(root\): unknown key "colour"/),
        expect.stringMatching(/sources\[0\]\.lagSeconds: Too small/),
        expect.stringMatching(/schedules\.budget: /),
        expect.stringMatching(/schedules\.overrides\[0\]\.source: no source named "clinik" \(did you mean "clinic"\?\)$/),
        expect.stringMatching(/webhooks\.concurrency: /),
        expect.stringMatching(/^LOG_LEVEL: "verbose" is not a log level: use one of fatal, error, warn, info, debug, trace, silent$/),
        expect.stringMatching(/^DATABASE_URL: must start with postgres:\/\//),
      ]),
    );
    expect(list).toHaveLength(7);
  });
});

describe('DATABASE_URL sslmode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-ca-'));
  const ca = join(dir, 'ca.pem');
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n');
  const load = (query: string) =>
    loadConfig(STREAM_REGISTRY, { env: { DATABASE_URL: `postgres://u:p@db.internal:5432/practice${query}` } });

  it('gives prefer, require and verify-ca libpq meaning; leaves verify-full, disable, no-verify and an explicit choice as written', () => {
    for (const mode of ['prefer', 'require'])
      expect(load(`?sslmode=${mode}`).databaseUrl).toBe(`postgres://u:p@db.internal:5432/practice?sslmode=${mode}&uselibpqcompat=true`);
    // The query is written anew, so the path comes back form-encoded: the driver decodes it.
    expect(load(`?sslmode=verify-ca&sslrootcert=${ca}`).databaseUrl).toBe(
      `postgres://u:p@db.internal:5432/practice?sslmode=verify-ca&sslrootcert=${encodeURIComponent(ca)}&uselibpqcompat=true`,
    );
    for (const query of [
      '',
      '?sslmode=verify-full',
      `?sslmode=verify-full&sslrootcert=${ca}`,
      '?sslmode=disable',
      '?sslmode=no-verify',
      '?sslmode=require&uselibpqcompat=false',
    ])
      expect(load(query).databaseUrl).toBe(`postgres://u:p@db.internal:5432/practice${query}`);
  });

  it('refuses a CA, certificate or key file that cannot be read, and verify-ca without a CA, naming what each holds', () => {
    const missing = join(dir, 'nope.pem');
    const empty = join(dir, 'empty.pem');
    writeFileSync(empty, '');
    expect(problems(() => load(`?sslmode=verify-full&sslrootcert=${missing}&sslcert=${empty}&sslkey=${dir}`))).toEqual([
      `DATABASE_URL sslrootcert: file ${missing} does not exist (it holds the CA certificate that signed the database server's certificate)`,
      `DATABASE_URL sslcert: file ${empty} is empty (it should hold the client certificate pmsync shows the database server)`,
      `DATABASE_URL sslkey: file ${dir} cannot be read (EISDIR) (it holds the client certificate's private key)`,
    ]);
    expect(problems(() => load('?sslmode=verify-ca'))).toEqual([
      'DATABASE_URL: sslmode=verify-ca checks the certificate against the CA in sslrootcert: add sslrootcert=/path/to/ca.pem, or use sslmode=verify-full',
    ]);
    expect(problems(() => load('?sslmode=verify-full&sslrootcert=system'))).toEqual([
      expect.stringMatching(/sslrootcert=system is not supported/),
    ]);
  });
});
