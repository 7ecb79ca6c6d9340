/**
 * What a source's config says about one of its tables: whether it keeps
 * history (`history`), and which typed columns are read from another raw field
 * than pmsync's default (`columns`, e.g. `{ "appointments.start_at": "StartTime" }`
 * for a server that names the appointment's start StartTime). Checked once at
 * start-up against the stream registry; the page writer applies them.
 */
import type { SourceConfig } from '../config/schema.ts';
import { tablePolicy, type TablePolicy } from './privacy.ts';
import { PRO_STREAMS, restStreamsFor } from './streams/index.ts';
import type { ProFanOutStream, ProListStream } from './streams/pro/stream.ts';
import type { ColumnOverride, StreamBase } from './types.ts';

export interface TableSettings {
  /** Keep `<table>_history` versions. */
  history: boolean;
  overrides: ColumnOverride[];
  /** The column policies applied to every record before it is validated or stored (src/sync/privacy.ts); none when absent. */
  privacy?: TablePolicy;
}

export const DEFAULT_SETTINGS: TableSettings = { history: false, overrides: [] };

/** The streams that write a table for a source of this kind (availability snapshots have no typed record table). */
export function tableStreams(source: SourceConfig): StreamBase[] {
  if (source.kind !== 'pro') return restStreamsFor(source);
  return PRO_STREAMS.filter((s): s is ProListStream | ProFanOutStream => s.kind !== 'pro-snapshot');
}

/** The settings of one stream's table for one source. */
export function settingsFor(source: SourceConfig, stream: StreamBase): TableSettings {
  const overrides: ColumnOverride[] = [];
  for (const [key, field] of Object.entries(source.columns)) {
    const dot = key.indexOf('.');
    const column = key.slice(dot + 1);
    const defaultField = stream.fields[column];
    if (key.slice(0, dot) === stream.table.name && defaultField !== undefined) overrides.push({ column, defaultField, field });
  }
  const settings: TableSettings = { history: source.history.includes(stream.table.name), overrides };
  if (source.privacy) settings.privacy = tablePolicy(source, stream, overrides);
  return settings;
}

/** Column to raw field, with the source's overrides applied. */
export function effectiveFields(stream: StreamBase, settings: TableSettings): Record<string, string> {
  const fields = { ...stream.fields };
  for (const o of settings.overrides) fields[o.column] = o.field;
  return fields;
}

/**
 * The record as the mapper should see it: each overridden column's default
 * field holds the configured field's value (absent when the record lacks it).
 * The stored raw stays the record as received.
 */
export function remap(raw: unknown, overrides: ColumnOverride[]): unknown {
  if (overrides.length === 0 || raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const record = raw as Record<string, unknown>;
  const view: Record<string, unknown> = { ...record };
  for (const o of overrides) {
    if (Object.hasOwn(record, o.field)) view[o.defaultField] = record[o.field];
    else delete view[o.defaultField];
  }
  return view;
}

/** Problems with a source's `columns` and `history` settings, each saying what to write instead. */
export function checkTableSettings(source: SourceConfig): string[] {
  const problems: string[] = [];
  const streams = tableStreams(source);
  const tables = streams.map((s) => s.table.name).join(', ');
  const unknownTable = (setting: string, name: string) => `${setting}: no table "${name}" for a ${source.kind} source; tables: ${tables}`;
  for (const [key, field] of Object.entries(source.columns)) {
    const dot = key.indexOf('.');
    if (dot <= 0 || dot === key.length - 1) {
      problems.push(
        `columns: "${key}" must be written <table>.<column>, e.g. "${streams[0]?.table.name ?? 'table'}.${Object.keys(streams[0]?.fields ?? {})[0] ?? 'column'}"`,
      );
      continue;
    }
    const [table, column] = [key.slice(0, dot), key.slice(dot + 1)];
    const stream = streams.find((s) => s.table.name === table);
    if (!stream) {
      problems.push(unknownTable(`columns: "${key}"`, table));
      continue;
    }
    if (stream.fields[column] === undefined) {
      const why =
        column in stream.table.columns
          ? 'is not read from one top-level raw field, so it cannot be remapped'
          : 'is not a typed column of it';
      problems.push(`columns: "${key}": "${column}" ${why}; columns that can be remapped: ${Object.keys(stream.fields).join(', ')}`);
      continue;
    }
    if (field.trim() !== field || field.includes('.')) {
      problems.push(
        `columns: "${key}": "${field}" must be the name of a top-level field of the record as the API sends it, e.g. "${stream.fields[column]}"`,
      );
    }
  }
  for (const table of source.history) {
    if (!streams.some((s) => s.table.name === table)) problems.push(unknownTable(`history: "${table}"`, table));
  }
  return problems;
}
