/**
 * Schema drift: where the records a server sends stop matching what pmsync
 * maps (after dlt's schema contracts and Airbyte's schema change detection).
 * The spec shows few field names, so a server that names a field differently
 * leaves a typed column empty in every row while raw holds the value; this is
 * how someone gets told.
 *
 * While a run validates its pages, a DriftObserver notes each record's
 * top-level fields with their JSON types, and how many mapped rows fill each
 * typed column: a few map updates per record inside the loop validation
 * already runs, no extra pass and no query. At the end of the run the
 * observation is merged into the table's stored state and the report is
 * recomputed from that state (src/sync/drift-record.ts). Findings, per table:
 *
 * - unmapped_field: a field in raw that no typed column reads (kept in raw
 *   only, or not kept at all when raw keeps only declared fields);
 * - personal_field: such a field whose name looks like personal data (a
 *   name, an email, a phone, a birth date, an address, notes...) that no
 *   column policy names yet: someone should decide what becomes of it;
 * - empty_column: a typed column null in every recent row while raw has a
 *   field whose name resembles it (the likely fix: a `columns` override);
 * - disappeared_field: a field no recent record had;
 * - type_changed: a field whose JSON type is not the one first seen.
 *
 * "Recent" is the last RECENT_RECORDS records, or the whole of the last
 * complete full pass, whichever says it first.
 */
import type { ColumnState, FieldState } from '../state/drift.ts';
import type { ColumnType } from '../db/table.ts';
import type { StreamBase } from './types.ts';

/** How many records in a row must lack a field (or a column value) before it counts as gone (or empty). */
export const RECENT_RECORDS = 20;

export type JsonType = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';
export type DriftKind = 'unmapped_field' | 'personal_field' | 'empty_column' | 'disappeared_field' | 'type_changed';

export function jsonType(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'boolean' ? t : 'object';
}

interface FieldCount {
  present: number;
  nonNull: number;
  /** JSON types of the non-null values. */
  types: Set<JsonType>;
}

/** What one run's records looked like. */
export class DriftObserver {
  records = 0;
  /** Records that passed validation and were mapped. */
  mapped = 0;
  readonly fields = new Map<string, FieldCount>();
  /** Typed column to mapped rows holding a value in it. */
  readonly filled = new Map<string, number>();

  record(raw: unknown): void {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return;
    this.records += 1;
    for (const [field, value] of Object.entries(raw)) {
      let count = this.fields.get(field);
      if (!count) {
        count = { present: 0, nonNull: 0, types: new Set() };
        this.fields.set(field, count);
      }
      count.present += 1;
      if (value !== null && value !== undefined) {
        count.nonNull += 1;
        count.types.add(jsonType(value));
      }
    }
  }

  row(columns: Record<string, unknown>): void {
    this.mapped += 1;
    for (const [column, value] of Object.entries(columns)) {
      if (value !== null && value !== undefined) this.filled.set(column, (this.filled.get(column) ?? 0) + 1);
    }
  }
}

export interface Finding {
  kind: DriftKind;
  /** The field or column concerned. */
  subject: string;
  /** What identifies this finding's content: a change of it is logged, a change of counts is not. */
  signature: string;
  detail: string;
}

/** Merges one run's observation into the stored state (pure). */
export function mergeObservation(
  fields: FieldState[],
  columns: ColumnState[],
  obs: DriftObserver,
  tableColumns: string[],
  fullPass: boolean,
  now: string,
): { fields: FieldState[]; columns: ColumnState[] } {
  const byField = new Map(fields.map((f) => [f.field, { ...f }]));
  for (const [field, count] of obs.fields) {
    const types = [...count.types].sort();
    const known = byField.get(field);
    if (!known) {
      byField.set(field, {
        field,
        baselineTypes: types,
        lastTypes: types,
        firstSeenAt: now,
        lastSeenAt: now,
        missingRecords: 0,
        missingInFullPass: false,
        lastRecords: 0,
        lastPresent: 0,
        lastNonNull: 0,
        seenShare: 0,
      });
      continue;
    }
    known.lastSeenAt = now;
    known.missingRecords = 0;
    known.missingInFullPass = false;
    if (types.length > 0) {
      known.lastTypes = types;
      // A field only ever seen null has no type yet: its first values set the baseline.
      if (known.baselineTypes.length === 0) known.baselineTypes = types;
    }
  }
  for (const f of byField.values()) {
    const count = obs.fields.get(f.field);
    f.lastRecords = obs.records;
    f.lastPresent = count?.present ?? 0;
    f.lastNonNull = count?.nonNull ?? 0;
    if (count) f.seenShare = obs.records > 0 ? count.present / obs.records : 0;
    else {
      f.missingRecords += obs.records;
      if (fullPass && obs.records > 0) f.missingInFullPass = true;
    }
  }
  const byColumn = new Map(columns.map((c) => [c.column, { ...c }]));
  for (const column of tableColumns) {
    const c = byColumn.get(column) ?? { column, nullStreak: 0, nullInFullPass: false, lastFilledAt: null };
    if ((obs.filled.get(column) ?? 0) > 0) {
      c.nullStreak = 0;
      c.nullInFullPass = false;
      c.lastFilledAt = now;
    } else {
      c.nullStreak += obs.mapped;
      if (fullPass && obs.mapped > 0) c.nullInFullPass = true;
    }
    byColumn.set(column, c);
  }
  return { fields: [...byField.values()], columns: [...byColumn.values()] };
}

/** The top-level fields a stream's raw schema names (ids, ModifiedOn and nested objects included). */
export function schemaFields(stream: StreamBase): string[] {
  const shape = (stream.raw as unknown as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape) : Object.values(stream.fields);
}

/** JSON types a column of this type accepts. */
const ACCEPTS: Record<ColumnType, JsonType[] | 'any'> = {
  text: ['string'],
  boolean: ['boolean'],
  date: ['string'],
  timestamp: ['string'],
  numeric: ['number', 'string'],
  integer: ['number'],
  bigint: ['number'],
  jsonb: 'any',
};

const GENERIC_WORDS = new Set(['at', 'on', 'is', 'id', 'of', 'by', 'the', 'to']);

/** The words of a field or column name: StartDateTime, start_at and START-DATE all split into words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Words of a candidate that also name the column or its default field (generic ones like "at" and "id" do not count). */
export function sharedWords(candidate: string, column: string, defaultField: string): number {
  const wanted = new Set([...nameWords(column), ...nameWords(defaultField)].filter((w) => !GENERIC_WORDS.has(w)));
  const words = new Set(nameWords(candidate));
  let shared = 0;
  for (const w of words) if (wanted.has(w)) shared += 1;
  const flat = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (shared === 0 && [column, defaultField].some((n) => flat(candidate).includes(flat(n)) || flat(n).includes(flat(candidate))))
    shared = 1;
  return shared;
}

const typesText = (types: string[]) => (types.length > 0 ? types.join(' or ') : 'null only');

/** Words of a field name that suggest personal data, by what they suggest. */
const PERSONAL_WORDS: Record<string, string[]> = {
  name: ['firstname', 'lastname', 'fullname', 'surname', 'nickname', 'maiden'],
  contact: ['email', 'mail', 'phone', 'mobile', 'cell', 'tel', 'telephone', 'fax', 'contact'],
  'birth date': ['birth', 'birthday', 'birthdate', 'dob', 'born', 'age'],
  address: ['address', 'addr', 'street', 'city', 'zip', 'zipcode', 'postal', 'postcode'],
  identifier: ['ssn', 'social', 'passport', 'license', 'licence', 'insurance', 'medicare', 'medicaid', 'mrn', 'national'],
  'health or free text': [
    'note',
    'notes',
    'comment',
    'comments',
    'diagnosis',
    'allergy',
    'allergies',
    'medication',
    'condition',
    'symptom',
    'symptoms',
  ],
  demographic: ['gender', 'sex', 'ethnicity', 'race'],
  'related person': ['emergency', 'guardian', 'spouse', 'parent', 'relative'],
};

/** Words that make a "name" a person's (`GuardianName`, `FirstName`), where `Name` alone may be a company's. */
const PERSON_WORDS = [
  'first',
  'last',
  'full',
  'given',
  'family',
  'middle',
  'nick',
  'patient',
  'customer',
  'client',
  'person',
  'member',
  'owner',
];

/**
 * What a field name suggests it holds when that looks like personal data
 * (`HomePhone`: "contact"), else null. A bare `Name` counts only in a table
 * that holds personal data.
 */
export function personalLooking(field: string, personalTable = false): string | null {
  const words = nameWords(field);
  for (const [what, list] of Object.entries(PERSONAL_WORDS)) if (words.some((w) => list.includes(w))) return what;
  if (words.includes('name') && (personalTable || words.some((w) => PERSON_WORDS.includes(w)))) return 'name';
  return null;
}

/** What the table's column policies say about raw fields no column reads. */
export interface DriftPrivacy {
  /** Raw fields a policy names (`<table>.raw.<field>`): reviewed, whatever the policy. */
  named: string[];
  /** Raw keeps only declared fields: an unmapped field is not stored. */
  declaredOnly: boolean;
}

/** The findings for one table, from its stored state (pure). */
export function driftReport(
  source: string,
  stream: StreamBase,
  effective: Record<string, string>,
  fields: FieldState[],
  columns: ColumnState[],
  privacy: DriftPrivacy = { named: [], declaredOnly: false },
): Finding[] {
  const table = stream.table.name;
  const overridden = new Set(
    Object.entries(stream.fields)
      .filter(([c, f]) => effective[c] !== f)
      .map(([, f]) => f),
  );
  const known = new Set([...schemaFields(stream).filter((f) => !overridden.has(f)), ...Object.values(effective)]);
  const readInto = new Map(Object.entries(effective).map(([c, f]) => [f, c]));
  const gone = (f: FieldState) => f.seenShare >= 0.5 && (f.missingRecords >= RECENT_RECORDS || f.missingInFullPass);
  const findings: Finding[] = [];

  for (const f of fields) {
    if (gone(f)) {
      const column = readInto.get(f.field);
      findings.push({
        kind: 'disappeared_field',
        subject: f.field,
        signature: 'gone',
        detail: `${f.field}${column ? ` (read into ${column})` : ''} was in ${f.missingInFullPass ? 'no record of the last full pass' : `none of the last ${f.missingRecords} records`}; last seen ${f.lastSeenAt}`,
      });
      continue;
    }
    if (f.baselineTypes.length > 0 && f.lastTypes.some((t) => !f.baselineTypes.includes(t))) {
      findings.push({
        kind: 'type_changed',
        subject: f.field,
        signature: `${f.baselineTypes.join('|')}>${f.lastTypes.join('|')}`,
        detail: `${f.field} was ${typesText(f.baselineTypes)}, the last run saw ${typesText(f.lastTypes)} (pmsync drift --accept --source ${source} takes that as normal)`,
      });
    }
    if (!known.has(f.field) && f.lastPresent > 0) {
      const looks = privacy.named.includes(f.field) ? null : personalLooking(f.field, stream.table.personal !== undefined);
      const name = `"${table}.raw.${f.field}"`;
      if (looks) {
        findings.push({
          kind: 'personal_field',
          subject: f.field,
          signature: privacy.declaredOnly ? 'not kept' : 'kept',
          detail: privacy.declaredOnly
            ? `${f.field} (${typesText(f.lastTypes)}) looks like personal data (${looks}); raw keeps declared fields only, so it is not stored. To keep it, name it in the source's privacy columns as ${name} with "hash", "drop", "keep" or another policy`
            : `${f.field} (${typesText(f.lastTypes)}) looks like personal data (${looks}) and is stored in raw as received: no typed column reads it and no policy names it. Decide what becomes of it in the source's privacy columns: ${name}: "drop", "hash" or "keep" (or set "raw": "declared")`,
        });
      } else {
        findings.push({
          kind: 'unmapped_field',
          subject: f.field,
          signature: privacy.declaredOnly && !privacy.named.includes(f.field) ? 'not kept' : 'unmapped',
          detail:
            privacy.declaredOnly && !privacy.named.includes(f.field)
              ? `${f.field} (${typesText(f.lastTypes)}) is not stored: no typed column reads it and raw keeps declared fields only`
              : `${f.field} (${typesText(f.lastTypes)}) is kept in raw only: no typed column reads it`,
        });
      }
    }
  }

  const candidates = fields.filter((f) => !known.has(f.field) && !gone(f) && f.lastNonNull > 0 && f.lastNonNull * 2 >= f.lastRecords);
  for (const c of columns) {
    const defaultField = effective[c.column];
    const type = stream.table.columns[c.column];
    if (defaultField === undefined || type === undefined) continue;
    if (!(c.nullStreak >= RECENT_RECORDS || c.nullInFullPass)) continue;
    const accepts = ACCEPTS[type];
    const ranked = candidates
      .filter((f) => accepts === 'any' || (f.lastTypes.length > 0 && f.lastTypes.every((t) => accepts.includes(t as JsonType))))
      .map((f) => ({ f, shared: sharedWords(f.field, c.column, stream.fields[c.column] ?? defaultField) }))
      .filter((x) => x.shared > 0)
      .sort((a, b) => b.shared - a.shared || b.f.lastNonNull - a.f.lastNonNull || a.f.field.localeCompare(b.f.field));
    const best = ranked[0]?.f;
    if (!best) continue;
    findings.push({
      kind: 'empty_column',
      subject: c.column,
      signature: best.field,
      detail:
        `${c.column} is null in ${c.nullInFullPass ? 'every row of the last full pass' : `the last ${c.nullStreak} rows`} (read from ${defaultField}), ` +
        `but raw has ${best.field} (${typesText(best.lastTypes)}, filled in ${best.lastNonNull} of the last run's ${best.lastRecords} records): ` +
        `if that is the value, set "columns": { "${table}.${c.column}": "${best.field}" } for source ${source}, then run pmsync repopulate --source ${source} --table ${table}`,
    });
  }
  const order: DriftKind[] = ['personal_field', 'empty_column', 'disappeared_field', 'type_changed', 'unmapped_field'];
  return findings.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || a.subject.localeCompare(b.subject));
}
