/**
 * Writes docs/tables.md, the analysts' table dictionary: every table from
 * prisma/schema.prisma (Prisma's own parser, @prisma/prisma-schema-wasm) and
 * every view and function the migrations create, read with its comments from
 * a database the migrations were just applied to.
 *
 *   npm run docs:tables                       rewrite docs/tables.md (and the personal columns in docs/privacy.md)
 *   npm run docs:tables -- --check            exit 1 if either is stale
 *
 * The scratch database is created next to DATABASE_URL's (and dropped after)
 * when it is set, else in a throw-away embedded PostgreSQL.
 * test/analysts/tables-doc.int.test.ts fails while docs/tables.md is stale.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readModels, type DmmfField } from './prisma-dmmf.ts';
import pg from 'pg';
import type { Queryable } from '../src/db/pool.ts';
import { PRO_STREAMS, REST_STREAMS } from '../src/sync/streams/index.ts';
import { writePrivacyDoc } from './privacy-columns.ts';
import { SHARED_COLUMNS } from '../src/sync/column-docs.ts';

export const SCHEMA_FILE = fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url));
export const DICTIONARY_FILE = fileURLToPath(new URL('../docs/tables.md', import.meta.url));

export interface Column {
  name: string;
  type: string;
  nullable: boolean;
  description: string;
}

export interface Relation {
  schema: string;
  name: string;
  kind: 'table' | 'view';
  description: string;
  primaryKey: string[];
  columns: Column[];
}

export { SHARED_COLUMNS };

function sqlType(f: DmmfField): string {
  const native = f.nativeType?.[0];
  switch (f.type) {
    case 'String':
      return 'text';
    case 'Boolean':
      return 'boolean';
    case 'Int':
      return 'integer';
    case 'BigInt':
      return 'bigint';
    case 'Float':
      return 'double precision';
    case 'Decimal':
      return 'numeric';
    case 'Json':
      return 'jsonb';
    case 'DateTime':
      return native === 'Date' ? 'date' : native === 'Timestamp' ? 'timestamp' : 'timestamptz';
    default:
      return f.type;
  }
}

/** Where a resource table's rows come from, from the stream registry. */
export function originOf(table: string): string {
  const rest = REST_STREAMS.find((st) => st.table.name === table);
  if (rest) {
    const how = rest.mode === 'full' ? 'read whole on every run' : 'read incrementally by ModifiedOn';
    return `${rest.variants.map((v) => (v === 'core' ? 'Core' : 'Subset')).join(' and ')} API, GET ${rest.path}, ${how}.`;
  }
  const pro = PRO_STREAMS.find((st) => st.table.name === table);
  return pro ? `Pro API, the ${pro.resource} stream.` : '';
}

/** Tables from the Prisma schema, parsed by Prisma's own parser. */
export function tablesFromSchema(schemaText: string): Relation[] {
  const models = readModels(schemaText);
  return models.map((m) => {
    const scalars = m.fields.filter((f) => f.kind === 'scalar');
    const dbName = (name: string) => scalars.find((f) => f.name === name)?.dbName ?? name;
    const pk = m.primaryKey?.fields ?? scalars.filter((f) => f.isId).map((f) => f.name);
    const synced = scalars.some((f) => (f.dbName ?? f.name) === 'content_hash');
    return {
      schema: m.schema ?? 'public',
      name: m.dbName ?? m.name,
      kind: 'table' as const,
      description: oneLine(m.documentation ?? originOf(m.dbName ?? m.name)),
      primaryKey: pk.map(dbName),
      columns: scalars.map((f) => {
        const name = f.dbName ?? f.name;
        return {
          name,
          type: sqlType(f),
          nullable: !f.isRequired,
          description: oneLine(f.documentation ?? (synced ? (SHARED_COLUMNS[name] ?? '') : '')),
        };
      }),
    };
  });
}

/** Views of the public schema with their columns and COMMENTs, from a migrated database. */
export async function viewsFromDatabase(db: Queryable): Promise<Relation[]> {
  const { rows } = await db.query<{
    view: string;
    view_comment: string | null;
    column_name: string;
    data_type: string;
    column_comment: string | null;
  }>(
    `SELECT c.relname AS view, obj_description(c.oid, 'pg_class') AS view_comment, a.attname AS column_name,
            format_type(a.atttypid, a.atttypmod) AS data_type, col_description(c.oid, a.attnum) AS column_comment
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
     WHERE n.nspname = 'public' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY c.relname, a.attnum`,
  );
  const views = new Map<string, Relation>();
  for (const r of rows) {
    let v = views.get(r.view);
    if (!v) {
      v = { schema: 'public', name: r.view, kind: 'view', description: oneLine(r.view_comment ?? ''), primaryKey: [], columns: [] };
      views.set(r.view, v);
    }
    v.columns.push({
      name: r.column_name,
      type: shortType(r.data_type),
      nullable: true,
      description: oneLine(r.column_comment ?? SHARED_COLUMNS[r.column_name] ?? ''),
    });
  }
  return [...views.values()];
}

export interface SqlFunction {
  name: string;
  arguments: string;
  result: string;
  description: string;
}

/** Functions of the public schema with their COMMENTs (the history "as of" functions). */
export async function functionsFromDatabase(db: Queryable): Promise<SqlFunction[]> {
  const { rows } = await db.query<{ name: string; args: string; result: string; comment: string | null }>(
    `SELECT p.proname AS name, pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result, obj_description(p.oid, 'pg_proc') AS comment
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' ORDER BY p.proname`,
  );
  return rows.map((r) => ({ name: r.name, arguments: r.args, result: r.result, description: oneLine(r.comment ?? '') }));
}

function shortType(t: string): string {
  return t
    .replace(/^timestamp\(\d\) with time zone$|^timestamp with time zone$/, 'timestamptz')
    .replace(/^timestamp\(\d\) without time zone$|^timestamp without time zone$/, 'timestamp')
    .replace(/^character varying.*$/, 'text');
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

function cell(s: string): string {
  return s.replaceAll('|', '\\|');
}

function section(r: Relation): string {
  const pk = r.primaryKey.length > 0 ? `Primary key: (${r.primaryKey.join(', ')}).` : '';
  const about = [r.description, pk].filter(Boolean).join(' ');
  const title = r.schema === 'public' ? r.name : `${r.schema}.${r.name}`;
  const rows = r.columns.map(
    (c) => `| ${c.name} | ${c.type} | ${r.kind === 'view' ? '' : c.nullable ? 'yes' : 'no'} | ${cell(c.description)} |`,
  );
  return `### ${title}\n\n${about ? `${about}\n\n` : ''}| column | type | null | description |\n|---|---|---|---|\n${rows.join('\n')}\n`;
}

/** The whole docs/tables.md. Pure: same input, same text. */
export function renderDictionary(tables: Relation[], views: Relation[], functions: SqlFunction[] = []): string {
  const byName = (a: Relation, b: Relation) => a.name.localeCompare(b.name);
  const resources = tables.filter((t) => t.schema === 'public').sort(byName);
  const own = tables.filter((t) => t.schema !== 'public').sort(byName);
  return [
    '# Table dictionary',
    '',
    '<!-- Generated by `npm run docs:tables` (scripts/table-dictionary.ts) from prisma/schema.prisma and the views in',
    'prisma/migrations. Do not edit by hand: a test fails when this file is stale. -->',
    '',
    'Every table, view and function pmsync creates. Resource tables live in the `public` schema, one row per',
    'record per source, keyed by (source, id); their metadata columns (raw, fetched_at, synced_at,',
    'not_seen_since, ...) mean the same in every one. Each has a `<table>_history` twin, filled only for',
    "the sources that list the table in `history` (history mode). pmsync's own bookkeeping lives in the",
    '`pmsync` schema. See [analysts.md](analysts.md) for how to query them.',
    '',
    '## Views',
    '',
    ...views.sort(byName).map(section),
    ...(functions.length > 0
      ? [
          '## Functions',
          '',
          '| function | returns | description |',
          '|---|---|---|',
          ...[...functions]
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((f) => `| ${f.name}(${cell(f.arguments)}) | ${cell(f.result)} | ${cell(f.description)} |`),
          '',
        ]
      : []),
    '## Resource tables (schema public)',
    '',
    ...resources.map(section),
    '## pmsync bookkeeping (schema pmsync)',
    '',
    ...own.map(section),
  ].join('\n');
}

/** View columns without a COMMENT take the description of the table column they share a name with. */
export function inheritDescriptions(views: Relation[], tables: Relation[]): Relation[] {
  const known = new Map<string, string>();
  for (const t of tables.filter((x) => x.schema === 'public'))
    for (const c of t.columns) if (c.description && !known.has(c.name)) known.set(c.name, c.description);
  return views.map((v) => ({ ...v, columns: v.columns.map((c) => (c.description ? c : { ...c, description: known.get(c.name) ?? '' })) }));
}

/** Builds the dictionary against a scratch database the migrations are applied to. */
export async function buildDictionary(): Promise<string> {
  const tables = tablesFromSchema(readFileSync(SCHEMA_FILE, 'utf8'));
  return withScratchDatabase(async (pool) =>
    renderDictionary(tables, inheritDescriptions(await viewsFromDatabase(pool), tables), await functionsFromDatabase(pool)),
  );
}

/**
 * Runs `use` against a scratch database the migrations were just applied to:
 * created next to DATABASE_URL's (and dropped after) when it is set, else in
 * a throw-away embedded PostgreSQL.
 */
export async function withScratchDatabase<T>(use: (pool: Queryable) => Promise<T>): Promise<T> {
  const { migrate } = await import('../src/db/migrate.ts');
  const { createPool } = await import('../src/db/pool.ts');
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<unknown>) | undefined;
  let dataDir: string | undefined;
  if (!adminUrl) {
    const { startEmbedded } = await import('../src/db/embedded.ts');
    dataDir = mkdtempSync(join(tmpdir(), 'pmsync-scratch-'));
    const db = await startEmbedded({ dataDir, port: 0, database: 'postgres', persistent: false });
    adminUrl = db.connectionString;
    stopEmbedded = db.stop;
  }
  const name = `pmsync_scratch_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const pool = createPool(url.toString(), 2);
    try {
      await migrate(pool);
      return await use(pool);
    } finally {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
    await stopEmbedded?.();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await buildDictionary();
  if (process.argv.includes('--check')) {
    const current = readFileSync(DICTIONARY_FILE, 'utf8');
    if (current !== text || !writePrivacyDoc(true)) {
      process.stderr.write('docs/tables.md or the personal columns in docs/privacy.md are stale: run "npm run docs:tables"\n');
      process.exit(1);
    }
    process.stdout.write('docs/tables.md and docs/privacy.md are up to date\n');
  } else {
    writeFileSync(DICTIONARY_FILE, text);
    writePrivacyDoc(false);
    process.stdout.write(`wrote ${DICTIONARY_FILE} and the personal columns in docs/privacy.md\n`);
  }
}
