/**
 * The fleet summary of `pmsync status` and of serve's status page, over five
 * practices left in different states by real syncs against the simulator:
 * one whose API user is refused (401, twice), one that spent its budget, one
 * never synced (first pass open), one staler than its freshness target, and
 * one in order. Their names run the other way round alphabetically, so the
 * order shown is the verdicts' and nothing else. The CLI runs as a child
 * process and the page is fetched over HTTP; both read one PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { Config } from '../../src/config/schema.ts';
import type { FleetSummary } from '../../src/status/fleet.ts';
import type { SourceStatus } from '../../src/status/detail.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, runCli, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, openTestApp, TestClock, type TestApp } from '../support/harness.ts';

const tenant = (n: string) => ({
  apikey: `fleet-key-${n}-Q1`,
  username: `fleet.${n}`,
  password: `fleet-pass-${n}-Z2`,
  variant: 'core' as const,
});
const TENANTS = { alder: tenant('a'), birch: tenant('b'), cedar: tenant('c'), elm: tenant('e'), fir: tenant('f') };
const WRONG_PASSWORD = 'Wrong-Pw-5512';
const STREAMS = ['companies', 'customers', 'orders'];
/** Worst first: failing, over budget, behind (first pass before late), ok. */
const ORDER = ['fir', 'elm', 'cedar', 'birch', 'alder'];

const clock = new TestClock('2026-03-12T09:00:00.000Z');
let sim: Simulator;
let db: TestDatabase;
let file: string;

const env = () => cliEnv({ DATABASE_URL: db.url, NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() });
const cli = (...args: string[]) => runCli(['--config', file, ...args], env());

beforeAll(async () => {
  sim = await startSimulator({
    seed: 5,
    now: clock.now,
    tenants: Object.values(TENANTS).map((t) => ({ ...t, sizes: { companies: 2, customers: 30, orders: 20 } })),
  });
  db = await createTestDatabase();
  const entry = (name: keyof typeof TENANTS, extra: Record<string, unknown> = {}) =>
    coreEntry(sim, name, TENANTS[name], { streams: STREAMS, lagSeconds: 0, ...extra });
  file = writeConfig({
    sources: [entry('alder'), entry('birch'), entry('cedar'), entry('elm', { budget: 2 }), entry('fir', { password: WRONG_PASSWORD })],
    // birch alone has a freshness target, on streams pinned to a nightly cron so that it holds at every
    // hour (a budget stream is held to its target only in the hours it is expected to change, and these
    // streams have no change model yet); the others are held to the floor (24 h).
    schedules: { overrides: [{ source: 'birch', cron: '0 3 * * *', maxStalenessMinutes: 30 }] },
  });

  for (const name of ['alder', 'birch', 'elm']) expect((await cli('sync', '--source', name)).code, name).toBe(0);
  expect((await cli('sync', '--source', 'fir')).code).toBe(4);
  clock.advance(60_000);
  // elm's checks need a request per stream: its budget of 2 runs out on the third, and the
  // checks after it wait for the next run (stalest first). A budget spent as planned exits 0.
  const elm = await cli('sync', '--source', 'elm');
  expect(elm.code).toBe(0);
  expect(elm.stdout).toMatch(/elm: checks deferred to the next run \(the day's scheduled-spend budget is spent/);
  expect((await cli('sync', '--source', 'fir')).code).toBe(4);
  clock.set('2026-03-12T09:45:00.000Z');
});

afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

const SECRETS = () =>
  Object.values(TENANTS)
    .flatMap((t) => [t.apikey, t.password, Buffer.from(`${t.username}:${t.password}`).toString('base64')])
    .concat([WRONG_PASSWORD, Buffer.from(`${TENANTS.fir.username}:${WRONG_PASSWORD}`).toString('base64')]);

/** The summary's rows: source and verdict, in the order printed. */
function rowsOf(stdout: string): Array<{ source: string; verdict: string; line: string }> {
  return stdout
    .split('\n')
    .map((line) => /^(\w+)\s+(failing|over budget|behind|ok)\s/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ source: m[1]!, verdict: m[2]!, line: m[0] + m.input.slice(m[0].length) }));
}

describe('pmsync status over several sources', () => {
  it('prints the totals, then one line per source, worst first, with why', async () => {
    const res = await cli('status');
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.split('\n');
    expect(lines[0]).toBe('5 sources: 1 failing, 1 over budget, 2 behind, 1 ok');
    expect(lines[2]).toMatch(/^SOURCE\s+HEALTH\s+STALEST\s+BUDGET\s+QUOTA\s+NEXT CHECK\s+WHY$/);
    const rows = rowsOf(res.stdout);
    expect(rows.map((r) => [r.source, r.verdict])).toEqual([
      ['fir', 'failing'],
      ['elm', 'over budget'],
      ['cedar', 'behind'],
      ['birch', 'behind'],
      ['alder', 'ok'],
    ]);
    const line = (source: string) => rows.find((r) => r.source === source)!.line;
    // fir: its first stream was refused twice; the others never got their turn.
    expect(line('fir')).toMatch(/companies failed its last 2 runs \(AUTH_FAILED\); first pass open: companies, customers and orders$/);
    // Run times are the database's clock, not the test's.
    expect(res.stdout).toMatch(/^ {2}last error of companies \(AUTH_FAILED, \d{4}-\d\d-\d\dT[\d:.]+Z\): .*401/m);
    expect(line('elm')).toMatch(/\s2\/2\s+\d+\/1000\s.*budget used up: 2 of 2/);
    expect(line('cedar')).toMatch(/companies first pass\s.*\sdue now\s+first pass open: companies, customers and orders$/);
    expect(line('birch')).toMatch(/companies 45 min \/ 30 min\s.*companies read 45 min ago, target 30 min; 2 more past target$/);
    // alder, in order: a new practice without webhooks explores its streams in turns (every hour at this budget), and
    // the turn of one of them came at 09:37.
    expect(line('alder')).toMatch(/(companies|customers|orders) 45 min \/ 24 h\s+0\/150\s+\d+\/1000\s+due now\s+-$/);
    expect(res.stdout).toContain('Per-source detail: pmsync status --source NAME');
    for (const secret of SECRETS()) expect(res.stdout + res.stderr).not.toContain(secret);
  });

  it('--problems leaves out the sources that are ok, --limit keeps the worst', async () => {
    const problems = await cli('status', '--problems');
    expect(rowsOf(problems.stdout).map((r) => r.source)).toEqual(ORDER.slice(0, 4));
    expect(problems.stdout).toContain('1 more source(s) not shown');
    expect(problems.stdout.split('\n')[0]).toBe('5 sources: 1 failing, 1 over budget, 2 behind, 1 ok');

    const top = await cli('status', '--limit', '2');
    expect(rowsOf(top.stdout).map((r) => r.source)).toEqual(['fir', 'elm']);
    expect(top.stdout).toContain('3 more source(s) not shown');

    const usage = await cli('status', '--limit', '0');
    expect(usage.code).toBe(2);
    const conflict = await cli('status', '--source', 'fir', '--problems');
    expect(conflict.code).toBe(2);
    expect(conflict.stderr).toMatch(/cannot be used with option '--problems'/);
  });

  it('--json keeps its per-source detail, in configuration order, each with its health', async () => {
    const res = await cli('status', '--json');
    expect(res.code, res.stderr).toBe(0);
    const statuses = JSON.parse(res.stdout) as SourceStatus[];
    expect(statuses.map((s) => s.source)).toEqual(['alder', 'birch', 'cedar', 'elm', 'fir']);
    for (const s of statuses) {
      expect(Object.keys(s)).toEqual(['source', 'kind', 'quota', 'budget', 'resources', 'health']);
      expect(s.resources.map((r) => r.resource)).toEqual(expect.arrayContaining(STREAMS));
    }
    const verdicts = Object.fromEntries(statuses.map((s) => [s.source, s.health!.verdict]));
    expect(verdicts).toEqual({ alder: 'ok', birch: 'behind', cedar: 'behind', elm: 'over budget', fir: 'failing' });
    const fir = statuses.find((s) => s.source === 'fir')!;
    expect(fir.health!.lastError).toMatchObject({ resource: 'companies', code: 'AUTH_FAILED', message: expect.stringMatching(/401/) });
    expect(fir.resources[0]!.lastRun).toMatchObject({ status: 'failed' });
  });

  it('--json --summary prints the summary: totals and every source worst first', async () => {
    const res = await cli('status', '--json', '--summary');
    expect(res.code, res.stderr).toBe(0);
    const fleet = JSON.parse(res.stdout) as FleetSummary;
    expect(fleet.at).toBe('2026-03-12T09:45:00.000Z');
    expect(fleet.totals).toEqual({ sources: 5, failing: 1, overBudget: 1, behind: 2, ok: 1 });
    expect(fleet.omitted).toBe(0);
    expect(fleet.sources.map((h) => h.source)).toEqual(ORDER);
    const [fir, elm, cedar, birch, alder] = fleet.sources;
    expect(fir!.failures).toEqual([
      { resource: 'companies', failedInARow: 2, code: 'AUTH_FAILED', message: expect.stringMatching(/401/), at: expect.any(String) },
    ]);
    expect(elm!.budget).toEqual({ used: 2, budget: 2 });
    expect(elm!.quota).toMatchObject({ dailyLimit: 1000, exhaustedUntil: null, resetsAt: '2026-03-13T00:00:00.000Z' });
    expect(cedar!.backfills).toEqual(STREAMS.map((resource) => ({ resource, firstPass: true, pagesLeft: null })));
    expect(cedar!.stalest).toMatchObject({ minutes: null });
    expect(cedar!.nextCheck).toMatchObject({ at: '2026-03-12T09:45:00.000Z' });
    expect(birch!.stalest).toMatchObject({ minutes: 45, targetMinutes: 30, overdueMinutes: 15 });
    expect(alder!.stalest).toMatchObject({ minutes: 45, targetMinutes: 24 * 60, overdueMinutes: 0 });
    expect(alder!.reasons).toEqual([]);
    expect(alder!.nextCheck).toEqual({ at: clock.iso(), resource: expect.stringMatching(/^(customers|orders)$/), reason: 'exploration' });
    for (const secret of SECRETS()) expect(res.stdout).not.toContain(secret);
  });

  it('--source NAME shows that source in detail, with its verdict', async () => {
    const res = await cli('status', '--source', 'birch');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^source birch \(core\): \d+\/1000 requests used on quota day 2026-03-12/);
    expect(res.stdout).toMatch(/^ {2}health: behind \((companies|customers|orders) read 45 min ago, target 30 min/m);
    expect(res.stdout).toMatch(/^ {2}customers\s+30 rows/m);
    expect(res.stdout).not.toMatch(/source alder/);
    const unknown = await cli('status', '--source', 'oak');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--source oak: no such source; sources: \w+/);
  });
});

describe("serve's status page over several sources", () => {
  let app: TestApp;
  let serve: RunningServe;
  let config: Config;

  beforeAll(async () => {
    const loaded = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
    config = { ...loaded, serve: { ...loaded.serve, port: 0, host: '127.0.0.1' } };
    app = await openTestApp(config, { now: clock.now });
    serve = await startServe(app, config, { manualTicks: true });
  });
  afterAll(async () => {
    await serve?.stop();
    await app?.close();
  });

  const page = async (query = '') => {
    const res = await fetch(`${serve.url}/${query}`);
    expect(res.status).toBe(200);
    return res.text();
  };

  it('puts the totals and the sources, worst first, at the top, each linking to its detail', async () => {
    const html = await page();
    expect(html).toContain('<p class="totals" aria-label="Totals">5 sources: 1 failing, 1 over budget, 2 behind, 1 ok</p>');
    const table = html.slice(html.indexOf('<table class="fleet"'), html.indexOf('</table>', html.indexOf('<table class="fleet"')));
    const rows = [...table.matchAll(/<tr data-source="([^"]+)" data-verdict="([^"]+)">/g)].map((m) => [m[1], m[2]]);
    expect(rows).toEqual([
      ['fir', 'failing'],
      ['elm', 'over budget'],
      ['cedar', 'behind'],
      ['birch', 'behind'],
      ['alder', 'ok'],
    ]);
    expect(table).toContain('<a href="?source=birch#source-birch">birch</a>');
    expect(table).toMatch(
      /<td class="why">companies failed its last 2 runs \(AUTH_FAILED\)<br>first pass open: companies, customers and orders<br><small>last failure <time datetime="/,
    );
    expect(table).toContain('budget used up: 2 of 2');
    expect(table).toMatch(/read 45 min ago, target 30 min/);
    // The summary comes before the per-source detail, which is inline for a handful of sources.
    expect(html.indexOf('id="fleet"')).toBeLessThan(html.indexOf('id="attention"'));
    for (const name of ORDER) expect(html).toContain(`<h2 id="source-${name}">Source ${name} <small>(core)</small></h2>`);
    // Error codes only: never an error message (it may quote what a server sent), a URL or a secret.
    expect(html).not.toMatch(/401 Unauthorized/);
    expect(html).not.toContain(sim.coreBaseUrl());
    for (const secret of SECRETS()) expect(html).not.toContain(secret);
  });

  it('?source=NAME shows that source in detail below the summary', async () => {
    const html = await page('?source=birch');
    expect(html).toContain('5 sources: 1 failing, 1 over budget, 2 behind, 1 ok');
    expect(html).toContain('<h2 id="source-birch">Source birch <small>(core)</small></h2>');
    expect(html).not.toContain('id="source-alder"');
    expect(html).toContain('aria-label="Streams of birch"');

    const unknown = await page('?source=%3Cb%3Eoak');
    expect(unknown).toContain('No source named &lt;b&gt;oak is configured.');
    expect(unknown).not.toContain('<b>oak');
  });
});
