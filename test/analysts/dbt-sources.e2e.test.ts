/**
 * `pmsync dbt sources`: the real CLI writes a sources.yml that parses as
 * YAML, has the shape dbt documents for source properties (version 2,
 * sources, tables, columns, loaded_at_field, freshness with warn_after and
 * error_after), names only tables and columns a migrated database has, and
 * derives its freshness thresholds from each stream's target.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EXIT } from '../../src/errors.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

interface Period {
  count: number;
  period: string;
}
interface Table {
  name: string;
  description: string;
  loaded_at_field?: string;
  loaded_at_query?: string;
  freshness: { warn_after: Period; error_after: Period; filter?: string } | null;
  meta: { primary_key: string[] };
  columns: Array<{ name: string; description: string; tests?: string[] }>;
}
interface SourcesFile {
  version: number;
  sources: Array<{ name: string; description: string; schema: string; tables: Table[] }>;
}

let db: TestDatabase;
let file: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const core = (name: string, apikey: string) => ({
    name,
    kind: 'core',
    baseUrl: 'http://127.0.0.1:9/api/v1',
    apikey,
    username: 'u',
    password: 'p-secret-1',
  });
  file = writeConfig({
    schedules: {
      maxStalenessMinutes: 30,
      overrides: [
        { source: 'clinic_b', resource: 'customers', maxStalenessMinutes: 120 },
        { source: 'clinic_b', resource: 'companies', cron: '0 3 * * *' },
        { source: 'clinic_b', resource: 'orders', cron: 'off' },
      ],
    },
    sources: [
      core('clinic_a', 'dbt-key-a'),
      { ...core('clinic_b', 'dbt-key-b'), streams: ['customers', 'companies', 'orders'] },
      { name: 'pro_c', kind: 'pro', baseUrl: 'http://127.0.0.1:9', practiceId: 7, token: 'pro-token-c' },
    ],
  });
});
afterAll(async () => db.drop());

const cli = (...args: string[]) => runCli([...args, '--config', file], cliEnv({ DATABASE_URL: db.url }));

async function dbColumns(): Promise<Map<string, Set<string>>> {
  const { rows } = await db.pool.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`,
  );
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!out.has(r.table_name)) out.set(r.table_name, new Set());
    out.get(r.table_name)!.add(r.column_name);
  }
  return out;
}

describe('pmsync dbt sources', () => {
  it('writes a sources.yml whose tables and columns the database has, with descriptions, keys and freshness', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'pmsync-dbt-')), 'sources.yml');
    const res = await cli('dbt', 'sources', '--out', out);
    expect(res.code, res.stderr).toBe(0);
    const text = readFileSync(out, 'utf8');
    for (const secret of ['dbt-key-a', 'dbt-key-b', 'p-secret-1', 'pro-token-c']) expect(text).not.toContain(secret);
    const doc = parse(text) as SourcesFile;
    expect(doc.version).toBe(2);
    expect(doc.sources.map((s) => s.name)).toEqual(['pmsync_clinic_a', 'pmsync_clinic_b', 'pmsync_pro_c']);

    const columns = await dbColumns();
    let checked = 0;
    for (const source of doc.sources) {
      expect(source.schema).toBe('public');
      expect(source.tables.length, source.name).toBeGreaterThan(0);
      for (const t of source.tables) {
        expect(Object.keys(t).sort(), `${source.name}.${t.name}`).toEqual(
          ['columns', 'description', 'freshness', 'loaded_at_field', 'meta', 'name'].sort(),
        );
        const have = columns.get(t.name);
        expect(have, `table ${t.name}`).toBeDefined();
        expect(have!.has(t.loaded_at_field!), `${t.name}.${t.loaded_at_field}`).toBe(true);
        expect(t.meta.primary_key).toEqual(['source', 'id']);
        expect(t.description).not.toBe('');
        // Every column of the table is listed and described, and none that it lacks.
        expect(t.columns.map((c) => c.name).sort(), t.name).toEqual([...have!].sort());
        for (const c of t.columns) expect(c.description, `${t.name}.${c.name}`).not.toBe('');
        expect(t.columns.filter((c) => c.tests?.includes('not_null')).map((c) => c.name)).toEqual(['source', 'id']);
        if (t.freshness) {
          for (const p of [t.freshness.warn_after, t.freshness.error_after]) {
            expect(Number.isInteger(p.count) && p.count > 0, t.name).toBe(true);
            expect(['minute', 'hour', 'day']).toContain(p.period);
          }
          expect(t.freshness.filter).toBe(`source = '${source.name.slice('pmsync_'.length)}'`);
          // The filter and loaded_at_field run as dbt would run them.
          await db.pool.query(`SELECT max(${t.loaded_at_field}) FROM public."${t.name}" WHERE ${t.freshness.filter}`);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(15);

    const table = (source: string, name: string) => doc.sources.find((s) => s.name === source)!.tables.find((t) => t.name === name);
    // The target (30 minutes) warns; the floor (24 hours) errors.
    expect(table('pmsync_clinic_a', 'customers')!.freshness).toEqual({
      warn_after: { count: 30, period: 'minute' },
      error_after: { count: 24, period: 'hour' },
      filter: "source = 'clinic_a'",
    });
    expect(table('pmsync_clinic_b', 'customers')!.freshness!.warn_after).toEqual({ count: 2, period: 'hour' });
    // Pinned by cron with the global target: twice the target errors; off: no freshness at all.
    expect(table('pmsync_clinic_b', 'companies')!.freshness!.error_after).toEqual({ count: 1, period: 'hour' });
    expect(table('pmsync_clinic_b', 'orders')!.freshness).toBeNull();
    expect(table('pmsync_clinic_b', 'appointments')).toBeUndefined();
    expect(table('pmsync_pro_c', 'pro_patients')).toBeDefined();
    const email = table('pmsync_clinic_a', 'customers')!.columns.find((c) => c.name === 'email')!;
    expect(email.description).toMatch(/^The customer's email address\. API field: Email\. Personal data/);
  });

  it('--loaded-at-query reads fresh_as_of from the pmsync_freshness view, a query that runs', async () => {
    const res = await cli('dbt', 'sources', '--loaded-at-query');
    expect(res.code, res.stderr).toBe(0);
    const doc = parse(res.stdout) as SourcesFile;
    const customers = doc.sources[0]!.tables.find((t) => t.name === 'customers')!;
    expect(customers.loaded_at_field).toBeUndefined();
    expect(customers.freshness!.filter).toBeUndefined();
    const result = await db.pool.query(customers.loaded_at_query!);
    expect(result.fields.map((f) => [f.name, f.dataTypeID])).toEqual([['fresh_as_of', pg.types.builtins.TIMESTAMPTZ]]);
  });

  it('refuses a configuration without sources with a message that says what to set', async () => {
    const empty = writeConfig({ sources: [] });
    const res = await runCli(['dbt', 'sources', '--config', empty], cliEnv({ DATABASE_URL: db.url }));
    expect(res.code).toBe(EXIT.CONFIG);
    expect(res.stderr).toMatch(/no sources configured/);
  });
});
