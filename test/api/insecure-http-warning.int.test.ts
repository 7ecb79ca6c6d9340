/**
 * The warning about a source reached in plain http across a network is said
 * once per source and host in a process: when it opens, and for a source a
 * reload brings, never again for one already named.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { loadTestConfig, openTestApp } from '../support/harness.ts';

const CREDENTIALS = { kind: 'core', apikey: 'warn-key-Vd3', username: 'warn.user', password: 'warn-pass-Jc5' };
const clinic = { ...CREDENTIALS, name: 'clinic', baseUrl: 'http://10.0.0.5/api/v1', allowInsecureHttp: true };
const north = { ...CREDENTIALS, name: 'north', apikey: 'warn-key-Nq8', baseUrl: 'http://10.0.0.6:8080/api/v1', allowInsecureHttp: true };

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

it('warns once per source and host: at start, and for what a reload adds or moves', async () => {
  const app = await openTestApp(loadTestConfig(db.url, [clinic]));
  try {
    const warnings = () =>
      app.logs
        .map((l) => JSON.parse(l) as { level: number; source?: string; host?: string; msg: string })
        .filter((l) => /in plain http/.test(l.msg))
        .map((l) => `${l.source} ${l.host}`);
    expect(warnings()).toEqual(['clinic 10.0.0.5']);

    app.applyConfig(loadTestConfig(db.url, [clinic]));
    expect(warnings()).toEqual(['clinic 10.0.0.5']);

    app.applyConfig(loadTestConfig(db.url, [clinic, north]));
    app.applyConfig(loadTestConfig(db.url, [{ ...clinic, baseUrl: 'http://10.0.0.7/api/v1' }, north]));
    expect(warnings()).toEqual(['clinic 10.0.0.5', 'north 10.0.0.6:8080', 'clinic 10.0.0.7']);
    expect(app.logs.join('\n')).not.toMatch(/warn-key|warn-pass/);
  } finally {
    await app.close();
  }
});
