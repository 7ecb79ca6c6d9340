/**
 * docs/privacy.md lists the personal columns the stream files declare: the
 * list is generated (`npm run docs:tables`), and this fails while it is stale.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PRIVACY_FILE, renderPersonalColumns, withPersonalColumns } from '../../scripts/privacy-columns.ts';
import customers from '../../src/sync/streams/core/customers.ts';

describe('the personal columns in docs/privacy.md', () => {
  it('are the ones the stream files declare', () => {
    const doc = readFileSync(PRIVACY_FILE, 'utf8');
    expect(doc, 'docs/privacy.md is stale: run "npm run docs:tables"').toBe(withPersonalColumns(doc));
  });

  it('name each declared column with what it holds and the policies its type takes', () => {
    const text = renderPersonalColumns();
    expect(text).toContain('| customers | email | email | text | `Email` | Core | `hash`, `prefix:N`, `drop`, `keep` |');
    expect(text).toContain('| pro_waitlist_entries | patient_first_name | name | text | `patient.firstName` | Pro |');
    expect(text).toContain('| customers | birthday | birth date | date | `Birthday` | Core | `year`, `drop`, `keep` |');
    const declared = Object.entries(customers.columnFacts).filter(([, f]) => f.personal);
    expect(text.split('\n').filter((l) => l.startsWith('| customers |'))).toHaveLength(declared.length);
  });
});
