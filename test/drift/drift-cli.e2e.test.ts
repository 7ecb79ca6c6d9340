/**
 * The operator's path through schema drift with the CLI as a child process:
 * a server that names the company's name "Name" leaves company_name empty;
 * status and `pmsync drift` say so and what to configure; a wrong override is
 * refused at start-up with the columns that exist; the right one plus
 * `pmsync repopulate` fills the stored rows (and their history) without an
 * API request; `pmsync drift --accept` takes a changed type as normal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';

const TENANT = { apikey: 'drift-cli-key-Q7', username: 'drift.cli', password: 'drift-cli-pass-R8', variant: 'core' as const };

let sim: Simulator;
let db: TestDatabase;

function config(extra: Record<string, unknown> = {}): string {
  return writeConfig({
    sources: [
      {
        name: 'clinic',
        kind: 'core',
        baseUrl: sim.coreBaseUrl(),
        apikey: TENANT.apikey,
        username: TENANT.username,
        password: TENANT.password,
        streams: ['companies'],
        history: ['companies'],
        ...extra,
      },
    ],
  });
}

const cli = (file: string, ...args: string[]) => runCli(['--config', file, ...args], cliEnv({ DATABASE_URL: db.url }));

beforeAll(async () => {
  sim = await startSimulator({
    seed: 4,
    tenants: [{ ...TENANT, sizes: { companies: 3 }, fieldNames: { companies: { CompanyName: 'Name' } } }],
  });
  db = await createTestDatabase();
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('schema drift from the command line', () => {
  it('status and pmsync drift report the empty column and the override that fills it', async () => {
    const file = config();
    const sync = await cli(file, 'sync');
    expect(sync.code).toBe(0);
    // logged once, as a warning
    const warnings = sync.stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(warnings.map((w) => [w.level, w.msg.startsWith('schema drift: clinic/companies: company_name is null in every row')])).toEqual([
      ['warn', true],
    ]);
    const status = await cli(file, 'status');
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      /companies .*\n(?: +serve: .*\n)?\s+drift: empty column: company_name is null in every row of the last full pass \(read from CompanyName\), but raw has Name \(string, filled in 3 of the last run's 3 records\): if that is the value, set "columns": \{ "companies\.company_name": "Name" \} for source clinic, then run pmsync repopulate --source clinic --table companies/,
    );
    expect(status.stdout).toMatch(/drift: in raw only: CreatedOn, Name/);

    const drift = await cli(file, 'drift', '--json');
    expect(drift.code).toBe(0);
    const report = JSON.parse(drift.stdout) as Array<{
      source: string;
      tables: Array<{ table: string; findings: Array<{ kind: string; subject: string }> }>;
    }>;
    expect(report[0]!.tables.find((t) => t.table === 'companies')!.findings.map((f) => `${f.kind} ${f.subject}`)).toEqual([
      'empty_column company_name',
      'unmapped_field CreatedOn',
      'unmapped_field Name',
    ]);
  });

  it('refuses an override naming a column that does not exist, listing the ones that do', async () => {
    const res = await cli(config({ columns: { 'companies.name': 'Name' } }), 'repopulate');
    expect(res.code).toBe(3);
    expect(res.stderr).toContain(
      'source "clinic" (sources[0]): columns: "companies.name": "name" is not a typed column of it; columns that can be remapped: company_name, is_active',
    );
    const table = await cli(config(), 'repopulate', '--table', 'company');
    expect(table.code).toBe(2);
    expect(table.stderr).toContain(
      '--table company: source "clinic" (core) has no such table; tables: companies, membership_programs, customers',
    );
  });

  it('repopulate fills the stored rows and their history from raw without a request', async () => {
    const file = config({ columns: { 'companies.company_name': 'Name' } });
    const requests = sim.stats().requests.length;
    const res = await cli(file, 'repopulate', '--source', 'clinic', '--table', 'companies');
    expect(res.stderr).toBe('');
    expect(res.stdout).toBe('clinic/companies: 3 row(s) changed, 3 history version(s) changed\n');
    expect(sim.stats().requests.length).toBe(requests);
    const served = sim
      .tenant(TENANT.apikey)
      .list('companies')
      .map((c) => String(c.Name))
      .sort();
    const stored = await db.pool.query("SELECT company_name FROM companies WHERE source = 'clinic' ORDER BY company_name");
    expect(stored.rows.map((r) => r.company_name)).toEqual(served);
    const versions = await db.pool.query(
      "SELECT count(*)::int AS n FROM companies_history WHERE source = 'clinic' AND is_current AND company_name IS NOT NULL",
    );
    expect(versions.rows[0].n).toBe(3);

    const again = await cli(file, 'repopulate', '--source', 'clinic', '--table', 'companies');
    expect(again.stdout).toBe('clinic/companies: 0 row(s) changed, 0 history version(s) changed\n');

    const status = await cli(file, 'status');
    expect(status.stdout).not.toContain('empty column');
    expect(status.stdout).toMatch(/companies .*\n(?: +serve: .*\n)?\s+drift: in raw only: CreatedOn\n/);
  });

  it('repopulate flags at once a column an override empties, and clears it when the override is fixed', async () => {
    const findings = async (file: string) => {
      const drift = await cli(file, 'drift', '--json');
      const report = JSON.parse(drift.stdout) as Array<{
        tables: Array<{ table: string; findings: Array<{ kind: string; subject: string }> }>;
      }>;
      return report[0]!.tables.find((t) => t.table === 'companies')!.findings.map((f) => `${f.kind} ${f.subject}`);
    };
    // A field name the server does not send: every stored is_active becomes null.
    const wrong = config({ columns: { 'companies.company_name': 'Name', 'companies.is_active': 'Active' } });
    const res = await cli(wrong, 'repopulate', '--source', 'clinic', '--table', 'companies');
    expect(res.code, res.stderr).toBe(0);
    const warnings = res.stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(warnings.map((w) => [w.level, w.msg])).toEqual([
      [
        'warn',
        expect.stringMatching(
          /^schema drift: clinic\/companies: is_active is null in every row .*but raw has IsActive .*"companies\.is_active": "IsActive"/,
        ),
      ],
    ]);
    expect(await findings(wrong)).toContain('empty_column is_active');

    const right = config({ columns: { 'companies.company_name': 'Name' } });
    expect((await cli(right, 'repopulate', '--source', 'clinic', '--table', 'companies')).code).toBe(0);
    expect(await findings(right)).not.toContain('empty_column is_active');
    const filled = await db.pool.query("SELECT count(*)::int AS n FROM companies WHERE source = 'clinic' AND is_active IS NOT NULL");
    expect(filled.rows[0].n).toBe(3);
  });

  it('reports a changed type, even on a record set aside, until drift --accept', async () => {
    const file = config({ columns: { 'companies.company_name': 'Name' } });
    const [company] = sim.tenant(TENANT.apikey).list('companies');
    sim.tenant(TENANT.apikey).update('companies', String(company!.CompanyId), { IsActive: 'yes' });
    expect((await cli(file, 'sync')).code).toBe(0);
    const drift = await cli(file, 'drift');
    expect(drift.stdout).toMatch(
      /^source clinic\n {2}companies\n {4}type changed: IsActive was boolean, the last run saw boolean or string \(pmsync drift --accept --source clinic takes that as normal\) \(since .*\)\n {4}in raw only: CreatedOn\n$/,
    );
    const accepted = await cli(file, 'drift', '--accept');
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toBe('source clinic\n  companies\n    in raw only: CreatedOn\n');
  });
});
