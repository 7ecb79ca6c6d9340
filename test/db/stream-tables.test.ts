/**
 * prisma/schema.prisma's stream tables are generated from the stream files
 * (scripts/stream-tables.ts); this fails while the committed schema is stale.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelName, regenerate, SCHEMA_FILE, streamTables } from '../../scripts/stream-tables.ts';
import { ROOT } from '../support/cli.ts';

const SCRIPT = join(ROOT, 'scripts/stream-tables.ts');
const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8' });

describe('npm run tables', () => {
  it('--check passes on the committed schema.prisma (run "npm run tables" to regenerate)', () => {
    const res = run('--check');
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
  });

  it('--check fails with a clear message when a stream column is missing from schema.prisma', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-tables-'));
    try {
      const file = join(dir, 'schema.prisma');
      const stale = readFileSync(SCHEMA_FILE, 'utf8').replace(/\n {2}mobilePhone +String\? +@map\("mobile_phone"\)/, '');
      expect(stale).not.toBe(readFileSync(SCHEMA_FILE, 'utf8'));
      writeFileSync(file, stale);
      const res = run('--check', '--schema', file);
      expect(res.status).toBe(1);
      expect(res.stderr).toMatch(/schema\.prisma is stale.*npm run tables/);
      expect(run('--schema', file).status).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe(readFileSync(SCHEMA_FILE, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a model and a history model for a new stream table, with its indexes', () => {
    const tables = [
      ...streamTables(),
      {
        name: 'invoices',
        idType: 'text' as const,
        columns: { customer_id: 'text' as const, total: 'numeric' as const },
        indexes: [['source', 'customer_id']],
      },
    ];
    const text = regenerate(readFileSync(SCHEMA_FILE, 'utf8'), tables);
    expect(text).toContain('model Invoice {');
    expect(text).toContain('model InvoiceHistory {');
    expect(text).toMatch(/customerId +String\? +@map\("customer_id"\)/);
    expect(text).toContain('@@index([source, customerId])');
  });

  it('names models after the singular of their table', () => {
    expect(['companies', 'gift_certificates', 'pro_waitlist_entries', 'services'].map(modelName)).toEqual([
      'Company',
      'GiftCertificate',
      'ProWaitlistEntry',
      'Service',
    ]);
  });
});
