/**
 * docs/tables.md is generated (scripts/table-dictionary.ts); this fails while
 * it no longer matches prisma/schema.prisma and the migrations' views and functions.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import {
  DICTIONARY_FILE,
  functionsFromDatabase,
  inheritDescriptions,
  renderDictionary,
  SCHEMA_FILE,
  tablesFromSchema,
  viewsFromDatabase,
} from '../../scripts/table-dictionary.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

describe('docs/tables.md', () => {
  it('matches the schema and the views (run "npm run docs:tables" to regenerate)', async () => {
    const tables = tablesFromSchema(readFileSync(SCHEMA_FILE, 'utf8'));
    const expected = renderDictionary(
      tables,
      inheritDescriptions(await viewsFromDatabase(db.pool), tables),
      await functionsFromDatabase(db.pool),
    );
    const actual = readFileSync(DICTIONARY_FILE, 'utf8');
    expect(actual === expected, 'docs/tables.md is stale: run "npm run docs:tables" and commit the result').toBe(true);
  });

  it('documents every table and view with its columns', async () => {
    const text = readFileSync(DICTIONARY_FILE, 'utf8');
    for (const name of [
      'customers',
      'memberships',
      'membership_programs',
      'membership_details',
      'customer_overview',
      'appointments_per_company_day',
      'pmsync.runs',
      'pmsync.stream_schedule',
    ]) {
      expect(text).toContain(`\n### ${name}\n`);
    }
    expect(text).toMatch(/^\| not_seen_since \| timestamptz \| yes \| Set when the API stopped returning the record/m);
    expect(text).toMatch(/^\| program_match \| text \| {2}\| unique: one program has the name/m);
  });
});
