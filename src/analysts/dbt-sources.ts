/**
 * `pmsync dbt sources`: a dbt sources.yml for the configured streams, so an
 * analyst's dbt project reads the tables with their descriptions and checks
 * their freshness (`dbt source freshness`) against the targets pmsync works to.
 *
 * One dbt source per configured pmsync source (they share the tables, told
 * apart by the `source` column): each table with its columns and their
 * descriptions (the stream files' declarations, src/sync/column-docs.ts), the
 * primary key (source, id) as not_null tests and meta, `loaded_at_field`
 * synced_at (when a row last changed in PostgreSQL) with a `filter` on the
 * source, and `freshness` from the stream's schedule:
 *
 * - warn_after: the freshness target (schedules.maxStalenessMinutes or an
 *   override), else the floor (schedules.floorHours) of a budget stream;
 * - error_after: the floor, or twice warn_after when that is not longer;
 * - none for streams that are off, or pinned by cron without a target.
 *
 * synced_at moves only when a row changes: a table of a quiet practice looks
 * older than it is. `--loaded-at-query` writes a dbt 1.10+ `loaded_at_query`
 * reading fresh_as_of from the pmsync_freshness view instead (the end of the
 * last completed window: exact, however quiet the practice).
 */
import type { Config, SourceConfig } from '../config/schema.ts';
import { streamTargets } from '../scheduler/targets.ts';
import type { StreamTarget } from '../state/stream-targets.ts';
import { SHARED_COLUMNS, columnDoc } from '../sync/column-docs.ts';
import { PRO_STREAMS, REST_STREAMS } from '../sync/streams/index.ts';
import type { TableDef } from '../db/table.ts';

export interface DbtOptions {
  /** Write loaded_at_query (dbt 1.10 and later) on pmsync_freshness instead of loaded_at_field. */
  loadedAtQuery?: boolean;
  /** The schema the tables live in. */
  schema?: string;
}

type Period = { count: number; period: 'minute' | 'hour' };
interface DbtColumn {
  name: string;
  description: string;
  tests?: string[];
}
interface DbtTable {
  name: string;
  description: string;
  loaded_at_field?: string;
  loaded_at_query?: string;
  freshness: { warn_after: Period; error_after: Period; filter?: string } | null;
  meta: Record<string, unknown>;
  columns: DbtColumn[];
}
export interface DbtSourcesFile {
  version: 2;
  sources: Array<{ name: string; description: string; schema: string; meta: Record<string, unknown>; tables: DbtTable[] }>;
}

/** Metadata columns of every resource table, after its typed columns, in table order. */
const META_COLUMNS = [
  'raw',
  'content_hash',
  'source_modified_at',
  'fetched_at',
  'first_seen_at',
  'synced_at',
  'last_seen_at',
  'run_id',
  'not_seen_since',
];

function tableDef(source: SourceConfig, resource: string): TableDef | undefined {
  const streams = source.kind === 'pro' ? PRO_STREAMS.filter((s) => s.kind !== 'pro-snapshot') : REST_STREAMS;
  return (streams.find((s) => s.resource === resource) as { table: TableDef } | undefined)?.table;
}

function period(minutes: number): Period {
  return minutes % 60 === 0 ? { count: minutes / 60, period: 'hour' } : { count: Math.ceil(minutes), period: 'minute' };
}

/** warn_after and error_after from a stream's target and floor, in minutes; null when it has neither. */
export function thresholds(t: Pick<StreamTarget, 'targetMinutes' | 'floorMinutes'>): { warn: number; error: number } | null {
  const warn = t.targetMinutes ?? t.floorMinutes;
  if (warn === null) return null;
  const error = t.floorMinutes !== null && t.floorMinutes > warn ? t.floorMinutes : 2 * warn;
  return { warn, error };
}

const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

function columnsOf(t: TableDef): DbtColumn[] {
  const managed = Object.entries(t.managed ?? {}).map(([name, m]) => ({ name, description: m.doc ?? '' }));
  return [
    { name: 'source', description: SHARED_COLUMNS.source!, tests: ['not_null'] },
    { name: 'id', description: SHARED_COLUMNS.id!, tests: ['not_null'] },
    ...Object.keys(t.columns).map((name) => ({ name, description: columnDoc(t, name) ?? '' })),
    ...managed,
    ...META_COLUMNS.map((name) => ({ name, description: SHARED_COLUMNS[name]! })),
  ];
}

/** The sources.yml content for the configured sources (pure). */
export function dbtSources(config: Pick<Config, 'schedules' | 'sources'>, options: DbtOptions = {}): DbtSourcesFile {
  const schema = options.schema ?? 'public';
  const targets = streamTargets(config);
  return {
    version: 2,
    sources: config.sources.map((source) => {
      const tables: DbtTable[] = [];
      for (const target of targets.filter((t) => t.source === source.name)) {
        const def = tableDef(source, target.resource);
        if (!def) continue;
        const limits = thresholds(target);
        const freshness = limits
          ? {
              warn_after: period(limits.warn),
              error_after: period(limits.error),
              ...(options.loadedAtQuery ? {} : { filter: `source = ${sqlText(source.name)}` }),
            }
          : null;
        const where = `source = ${sqlText(source.name)} AND table_name = ${sqlText(def.name)}`;
        tables.push({
          name: def.name,
          description: `The ${target.resource} stream of ${source.name} (rows where source = '${source.name}'); ${target.kind === 'full' ? 'read whole on every pass' : 'read by what changed'}, schedule ${target.schedule}.`,
          ...(options.loadedAtQuery
            ? { loaded_at_query: `select fresh_as_of from "${schema}"."pmsync_freshness" where ${where}` }
            : { loaded_at_field: 'synced_at' }),
          freshness,
          meta: {
            primary_key: ['source', 'id'],
            pmsync_resource: target.resource,
            pmsync_target_minutes: target.targetMinutes,
            pmsync_fresh_as_of_query: `select fresh_as_of from "${schema}"."pmsync_freshness" where ${where}`,
          },
          columns: columnsOf(def),
        });
      }
      return {
        name: `pmsync_${source.name}`,
        description: `${source.kind === 'pro' ? 'Pro' : source.kind === 'subset' ? 'Subset' : 'Core'} API data of the source "${source.name}", kept by pmsync; rows of other sources share the tables, told apart by the source column.`,
        schema,
        meta: { pmsync_source: source.name, freshness_view: `${schema}.pmsync_freshness` },
        tables,
      };
    }),
  };
}

// ---- a YAML writer for this shape: block maps and lists, every string double-quoted ----

type Yaml = string | number | boolean | null | Yaml[] | { [k: string]: Yaml | undefined };

const scalar = (v: string | number | boolean | null) => (typeof v === 'string' ? JSON.stringify(v) : v === null ? 'null' : String(v));

function emit(value: Yaml, indent: string): string[] {
  if (Array.isArray(value)) {
    if (value.length === 0) return [`${indent}[]`];
    return value.flatMap((item) => {
      const lines = emit(item, `${indent}  `);
      return [`${indent}- ${lines[0]!.trimStart()}`, ...lines.slice(1)];
    });
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined) as Array<[string, Yaml]>;
    if (entries.length === 0) return [`${indent}{}`];
    return entries.flatMap(([k, v]) => {
      if (v !== null && typeof v === 'object' && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0))
        return [`${indent}${k}:`, ...emit(v, `${indent}  `)];
      return [`${indent}${k}: ${v !== null && typeof v === 'object' ? (Array.isArray(v) ? '[]' : '{}') : scalar(v)}`];
    });
  }
  return [`${indent}${scalar(value)}`];
}

export function toYaml(file: DbtSourcesFile): string {
  return [
    '# Written by `pmsync dbt sources` from the configuration and the stream files: regenerate it rather than edit it.',
    ...emit(file as unknown as Yaml, ''),
    '',
  ].join('\n');
}
