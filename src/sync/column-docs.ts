/**
 * What the columns of the resource tables mean, in one line each: the shared
 * metadata columns described once here, the typed columns as their stream
 * files declare them (meaning, API field, personal data). `npm run tables`
 * writes them into schema.prisma and the COMMENT migrations, docs/tables.md
 * shows them, and `pmsync dbt sources` puts them in sources.yml.
 */
import type { TableDef } from '../db/table.ts';

/** Columns every synced resource table shares, described once here. */
export const SHARED_COLUMNS: Record<string, string> = {
  source: 'Name of the configured source (account) the row came from.',
  id: 'The record id exactly as the API gives it.',
  raw: 'The whole record as the API returned it, unknown fields included.',
  content_hash: 'md5 of raw; a fetch that changes nothing leaves the row untouched.',
  source_modified_at: "The record's ModifiedOn (wall-clock time of the source), when it has one.",
  fetched_at: 'When the request that returned this copy was sent.',
  first_seen_at: 'When pmsync first stored the record.',
  synced_at: 'When the row last changed in PostgreSQL.',
  last_seen_at: 'When a complete pass last returned the record (full passes and single-record refreshes).',
  run_id: 'The pmsync.runs row that last wrote it (null for webhook and --id refreshes).',
  not_seen_since:
    'Set when the API stopped returning the record (a full pass missed it, or it answered 404). Never deleted; cleared when seen again.',
};

/** A personal column says so in its doc, which docs/tables.md shows (the stream files declare it). */
export function personalDoc(kind: string): string {
  return `Personal data (${kind}): a source's privacy settings may drop, hash or generalise it (docs/privacy.md).`;
}

/** A typed column's one line: its meaning and API field as the stream file declares them, and what personal data it holds. */
export function columnDoc(t: TableDef, column: string): string | undefined {
  const about = t.docs?.[column];
  const from = about && about.reads.length > 0 ? `API field: ${about.reads.join(' or ')}.` : '';
  const text = [about?.doc, from, t.personal?.[column] ? personalDoc(t.personal[column]) : ''].filter(Boolean).join(' ');
  return text || undefined;
}
