/**
 * `{ "file": "/path" }` secrets: read at every load (how a mounted secret
 * that is rotated reaches a running serve), and never printed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { secretFiles } from '../../src/config/secrets.ts';
import { configProblems as problems } from '../support/config-problems.ts';

const KEY = 'file-key-7Qx2';
const PASSWORD = 'file-pass-M4z8';

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'pmsync-reload-'));
}

function core(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    kind: 'core',
    baseUrl: 'https://api.example.com/api/v1',
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

describe('{ "file": ... } secrets', () => {
  it('reads the value at every load, without its trailing newline, relative to the config file', () => {
    const dir = folder();
    writeFileSync(join(dir, 'apikey'), `${KEY}\n`);
    writeFileSync(join(dir, 'password'), `${PASSWORD}\r\n`);
    const file = write(dir, { sources: [core('clinic', { apikey: { file: 'apikey' }, password: { file: join(dir, 'password') } })] });
    const first = loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }).sources[0]!;
    expect(first).toMatchObject({ apikey: KEY, password: PASSWORD });
    expect(first.credentialNames).toMatchObject({ apikey: 'apikey (file apikey)', password: `password (file ${join(dir, 'password')})` });
    expect(secretFiles({ sources: [core('clinic', { apikey: { file: 'apikey' } })] }, file)).toEqual([join(dir, 'apikey')]);
    // The column policies' hash keys, top level and per source, are watched too.
    expect(
      secretFiles(
        { privacy: { key: { file: 'hash.key' } }, sources: [core('clinic', { privacy: { key: { file: '/run/clinic.key' } } })] },
        file,
      ),
    ).toEqual([join(dir, 'hash.key'), '/run/clinic.key']);

    writeFileSync(join(dir, 'apikey'), 'rotated-key-1');
    expect(loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }).sources[0]).toMatchObject({ apikey: 'rotated-key-1' });
  });

  it('names a missing or empty file and what it holds, and never prints a secret', () => {
    const dir = folder();
    writeFileSync(join(dir, 'empty'), '\n');
    writeFileSync(join(dir, 'token'), `${KEY}\n`);
    const file = write(dir, {
      sources: [
        core('a', { apikey: { file: 'missing' }, password: { file: 'empty' } }),
        { name: 'p', kind: 'pro', baseUrl: 'https://pro.example.com', practiceId: 1, token: { file: 'token' }, pageLimit: 0 },
        core('b', { apikey: { fil: 'x' }, baseUrl: 'ftp://nope' }),
        // Valid on its own: checked after the broken entries, and named by its place in the file.
        core('c', { baseUrl: 'http://remote.example/api/v1' }),
      ],
    });
    const list = problems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }));
    expect(list).toEqual(
      expect.arrayContaining([
        `sources[0].apikey: file ${join(dir, 'missing')} does not exist (it holds the source's gateway key)`,
        `sources[0].password: file ${join(dir, 'empty')} is empty (it should hold the API user's password)`,
        expect.stringMatching(/sources\[1\]\.pageLimit: Too small/),
        expect.stringMatching(/sources\[2\]\.apikey: write the value, \{ "env": "VARIABLE" \} or \{ "file": "\/path\/of\/a\/file" \}/),
        expect.stringMatching(/source "b" \(sources\[2\]\): baseUrl must use https/),
        expect.stringMatching(/source "c" \(sources\[3\]\): baseUrl is plain http:\/\//),
      ]),
    );
    expect(list.join('\n')).not.toContain(KEY);
  });

  it('does not echo the text around a JSON syntax error (it may be an inline secret)', () => {
    const dir = folder();
    const file = join(dir, 'pmsync.json');
    writeFileSync(file, `{"sources": [{"apikey": "${KEY}" "x": 1}]}`);
    const list = problems(() => loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }));
    expect(list).toHaveLength(1);
    expect(list[0]).toMatch(/^config file .*pmsync\.json: /);
    expect(list[0]).not.toContain(KEY);
  });
});
