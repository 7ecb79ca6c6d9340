/**
 * Column policies against the stream declarations: the checks run at
 * start-up (every name must be a table, a column or a raw field of it, every
 * policy must fit the column's type, a hash needs a key), and a source's
 * policy for one table, compiled into the rules applied to each record as it
 * enters pmsync (src/privacy/record.ts) and the form stored in
 * pmsync.privacy_policies (src/privacy/stored.ts).
 */
import { KEEP, OPEN_PRIVACY, PERSONAL, ruleText, type PrivacySettings, type Rule } from '../config/privacy.ts';
import type { SourceConfig } from '../config/schema.ts';
import {
  declare,
  declaredFields,
  declaredPaths,
  OPEN_POLICY,
  type DeclaredTree,
  type PathRule,
  type RecordPolicy,
} from '../privacy/record.ts';
import { keyFingerprint, stricterOf, type Normalise, type ValueShape } from '../privacy/rules.ts';
import { OPEN_STORED, type StoredPolicy } from '../privacy/stored.ts';
import { suggestion } from '../strict-schema.ts';
import { PRO_STREAMS, REST_STREAMS } from './streams/index.ts';
import type { ColumnType } from '../db/table.ts';
import type { ColumnFacts, ColumnOverride, StreamBase } from './types.ts';

/** A source's policy for one table. */
export interface TablePolicy extends RecordPolicy {
  /** Typed columns with a rule other than keep. */
  columns: Record<string, { rule: Rule; facts: ColumnFacts }>;
  /** What pmsync.privacy_policies keeps of it. */
  stored: StoredPolicy;
  /** Raw fields named by a policy of their own (`<table>.raw.<field>`), whatever it is: reviewed ones. */
  named: string[];
}

export const OPEN_TABLE_POLICY: TablePolicy = { ...OPEN_POLICY, columns: {}, stored: OPEN_STORED, named: [] };

const RAW = 'raw.';

/** The shape `year` and `hash` see in a column of this type. */
function shapeOf(type: ColumnType): ValueShape {
  return type === 'date' || type === 'timestamp' || type === 'text' ? type : 'any';
}

/** Every stream that writes a table, whatever the API kind. */
function allTableStreams(): StreamBase[] {
  return [...REST_STREAMS, ...(PRO_STREAMS.filter((s) => s.kind !== 'pro-snapshot') as StreamBase[])];
}

/** The policy of one column: named, else the personal default for a personal column, else keep. */
function columnRule(settings: PrivacySettings, table: string, column: string, facts: ColumnFacts): Rule {
  if (facts.filledByRequest) return KEEP;
  return settings.columns[`${table}.${column}`] ?? (facts.personal ? settings.personal : null) ?? KEEP;
}

/** A source's policy for one stream's table, with the source's column remaps (`columns` settings). */
export function tablePolicy(source: SourceConfig, stream: StreamBase, overrides: ColumnOverride[]): TablePolicy {
  const settings = source.privacy ?? OPEN_PRIVACY;
  const table = stream.table.name;
  const byPath = new Map<string, PathRule>();
  const addPath = (path: string, rule: Rule, shape: ValueShape, normalise: Normalise) => {
    const known = byPath.get(path);
    byPath.set(path, known ? { ...known, rule: stricterOf(known.rule, rule) } : { path: path.split('.'), rule, shape, normalise });
  };
  const columns: TablePolicy['columns'] = {};
  const stored: StoredPolicy = { raw: 'all', columns: {}, fields: {}, key: null };
  for (const [column, facts] of Object.entries(stream.columnFacts)) {
    const rule = columnRule(settings, table, column, facts);
    if (rule.kind === 'keep') continue;
    const remapped = overrides.find((o) => o.column === column)?.field;
    const reads = remapped && !facts.reads.includes(remapped) ? [...facts.reads, remapped] : facts.reads;
    columns[column] = { rule, facts };
    stored.columns[column] = { rule: ruleText(rule), reads: [...reads] };
    for (const p of reads) addPath(p, rule, shapeOf(facts.type), facts.personal ?? 'text');
  }
  const named: string[] = [];
  for (const [name, rule] of Object.entries(settings.columns)) {
    if (!name.startsWith(`${table}.${RAW}`)) continue;
    const path = name.slice(table.length + 1 + RAW.length);
    named.push(path);
    if (rule.kind === 'keep') continue;
    stored.fields[path] = ruleText(rule);
    addPath(path, rule, 'any', 'text');
  }
  let declared: DeclaredTree | null = null;
  if (settings.raw === 'declared') {
    const tree = declaredFields(stream.raw);
    declared = tree === true ? new Map() : tree;
    for (const o of overrides) declare(declared, [o.field]);
    for (const path of named) declare(declared, path.split('.'));
    stored.raw = declaredPaths(declared);
  }
  const hashes = [...byPath.values()].some((p) => p.rule.kind === 'hash');
  const key = hashes ? settings.key : null;
  stored.key = key === null ? null : keyFingerprint(key);
  // Deeper paths first: a rule on `patient` then sees what the rule on `patient.firstName` left.
  const paths = [...byPath.values()].sort((a, b) => b.path.length - a.path.length);
  return { paths, declared, key, columns, stored, named };
}

/** The policies a column of this type can take, in words. */
function fitting(type: ColumnType): string {
  if (type === 'text') return '"hash", "prefix:N", "drop" or "keep"';
  if (type === 'date' || type === 'timestamp') return '"year", "drop" or "keep"';
  return '"drop" or "keep"';
}

/** Why a rule does not fit a column of this type, or null when it does. */
function misfit(rule: Rule, type: ColumnType): string | null {
  if ((rule.kind === 'hash' || rule.kind === 'prefix') && type !== 'text') return `"${ruleText(rule)}" applies to text columns only`;
  if (rule.kind === 'year' && type !== 'date' && type !== 'timestamp') return '"year" applies to date and date-time columns only';
  return null;
}

/**
 * Problems with the names and policies of one `privacy.columns` section.
 * `streams` are the tables the section may name: its source's, or every
 * kind's for the top-level section (whose entries reach the sources that have
 * the table).
 */
export function checkPrivacyColumns(columns: Record<string, Rule>, where: string, streams: StreamBase[] = allTableStreams()): string[] {
  const problems: string[] = [];
  const tables = [...new Set(streams.map((s) => s.table.name))];
  for (const [name, rule] of Object.entries(columns)) {
    const at = `${where}.columns: "${name}"`;
    const dot = name.indexOf('.');
    if (dot <= 0 || dot === name.length - 1) {
      problems.push(`${at} must be written <table>.<column>, <table>.raw.<field> or "${PERSONAL}" (e.g. "customers.email")`);
      continue;
    }
    const table = name.slice(0, dot);
    const rest = name.slice(dot + 1);
    const stream = streams.find((s) => s.table.name === table);
    if (!stream) {
      problems.push(`${at}: no table "${table}"${suggestion(table, tables)}`);
      continue;
    }
    const facts = stream.columnFacts;
    if (rest.startsWith(RAW)) {
      const path = rest.slice(RAW.length);
      const reader = Object.entries(facts).find(([, f]) => f.reads.includes(path));
      if (path === '' || path.split('.').includes(''))
        problems.push(`${at}: name a field of raw after "${table}.raw." (e.g. "${table}.raw.Notes")`);
      else if (reader)
        problems.push(`${at}: ${path} is read by the column ${table}.${reader[0]}: name the column ("${table}.${reader[0]}") instead`);
      continue;
    }
    const column = facts[rest];
    if (!column) {
      problems.push(
        `${at}: ${table} has no column "${rest}"${suggestion(rest, Object.keys(facts))}; a field kept only in raw is named ${table}.raw.<field>`,
      );
      continue;
    }
    if (column.filledByRequest && rule.kind !== 'keep') {
      problems.push(`${at}: ${table}.${rest} is the key its records are read under, so no policy can apply to it`);
      continue;
    }
    const why = misfit(rule, column.type);
    if (why) problems.push(`${at}: ${why}; ${table}.${rest} is ${column.type}: use ${fitting(column.type)}`);
  }
  return problems;
}

/**
 * Problems of a source's settings as a whole: the personal default reaching a
 * column whose type it does not fit (each must then be named), a hash without
 * a key, a key too short.
 */
export function checkSourcePrivacy(source: SourceConfig, streams: StreamBase[]): string[] {
  const settings = source.privacy ?? OPEN_PRIVACY;
  const problems: string[] = [];
  const unfit: string[] = [];
  let hashes = false;
  for (const stream of streams) {
    const table = stream.table.name;
    for (const [column, facts] of Object.entries(stream.columnFacts)) {
      const named = settings.columns[`${table}.${column}`];
      const rule = columnRule(settings, table, column, facts);
      if (!named && facts.personal && misfit(rule, facts.type)) unfit.push(`${table}.${column} (${facts.type})`);
      else if (rule.kind === 'hash') hashes = true;
    }
    for (const [name, rule] of Object.entries(settings.columns))
      if (name.startsWith(`${table}.${RAW}`) && rule.kind === 'hash') hashes = true;
  }
  if (unfit.length > 0 && settings.personal) {
    problems.push(
      `privacy.columns: "${PERSONAL}": "${ruleText(settings.personal)}" does not fit ${unfit.join(', ')}: name ${unfit.length === 1 ? 'it' : 'each'} with a policy of its own (a date takes "year", "drop" or "keep")`,
    );
  }
  if (hashes && settings.key === null) {
    problems.push(
      'privacy: "hash" needs a key: set "privacy": { "key": { "env": "PMSYNC_HASH_KEY" } } (or { "file": ... }) holding at least 32 random characters, e.g. from "openssl rand -hex 32"',
    );
  }
  return problems;
}
