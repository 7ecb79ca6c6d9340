/**
 * A reloaded configuration inside one serve, ticked by hand against the
 * simulator and a real PostgreSQL and run queue: what the scheduler
 * dispatches, a run and a webhook refresh for a source another replica
 * learnt of first, a rotated secret file, a changed budget and changed
 * column policies.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { Config } from '../../src/config/schema.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { prepareTable } from '../../src/sync/page.ts';
import employees from '../../src/sync/streams/core/employees.ts';
import { mountWebhooks } from '../../src/serve/webhooks.ts';
import { listDeadLetters, openRefreshQueue, refreshSuperviseSeconds } from '../../src/webhooks/queue.ts';
import { openJobQueue } from '../../src/queue.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { coreEntry, openTestApp, type TestApp } from '../support/harness.ts';
import { eventually } from './support.ts';

const ONE = { apikey: 'reload-int-key-1', username: 'one.user', password: 'reload-int-pw-1', variant: 'core' as const };
const TWO = { apikey: 'reload-int-key-2', username: 'two.user', password: 'reload-int-pw-2', variant: 'core' as const };
const SIZES = { companies: 2, employees: 3 };
const STREAMS = ['companies', 'employees'];

let sim: Simulator;
let db: TestDatabase;
let app: TestApp | undefined;
let serve: RunningServe | undefined;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 23,
    tenants: [
      { ...ONE, sizes: SIZES },
      { ...TWO, sizes: { ...SIZES, customers: 3 } },
    ],
  });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await serve?.stop();
  await app?.close();
  await db?.drop();
  serve = undefined;
  app = undefined;
});

interface Rig {
  file: string;
  dir: string;
  write(sources: Array<Record<string, unknown>>, extra?: Record<string, unknown>): void;
  load(): Config;
}

function rig(): Rig {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-reload-int-'));
  const file = join(dir, 'pmsync.json');
  return {
    file,
    dir,
    // No polling: the test decides when the file is looked at.
    write: (sources, extra = {}) =>
      writeFileSync(file, JSON.stringify({ sources, serve: { port: 0, host: '127.0.0.1', reloadSeconds: 0 }, ...extra })),
    load: () => loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url, LOG_LEVEL: 'info' } }),
  };
}

function entry(name: string, t: typeof ONE, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return coreEntry(sim, name, t, { lagSeconds: 0, streams: STREAMS, ...extra });
}

async function start(r: Rig, options: { webhooks?: boolean } = {}): Promise<RunningServe> {
  db = await createTestDatabase();
  const config = r.load();
  app = await openTestApp(config);
  serve = await startServe(app, config, {
    manualTicks: true,
    configFile: { path: r.file, load: r.load },
    webhooks: options.webhooks ? mountWebhooks : undefined,
  });
  return serve;
}

async function runsOf(source: string) {
  const res = await db.pool.query<{ resource: string; status: string; error_code: string | null }>(
    'SELECT resource, status, error_code FROM pmsync.runs WHERE source = $1 ORDER BY id',
    [source],
  );
  return res.rows;
}

/** Ticks, then waits for every run it dispatched to end. */
async function tickAndDrain(s: RunningServe) {
  const jobs = await s.scheduler.tick();
  await s.dispatcher.drained(db.pool);
  return jobs;
}

describe('a reloaded configuration in serve', () => {
  it('schedules a new source from the next tick as first passes, and never again a removed one', async () => {
    const r = rig();
    r.write([entry('one', ONE)]);
    const s = await start(r);
    expect((await tickAndDrain(s)).map((j) => `${j.source}/${j.resource}`).sort()).toEqual(['one/companies', 'one/employees']);

    r.write([entry('one', ONE), entry('two', TWO)]);
    expect(await s.reload()).toBe('applied');
    expect(s.scheduler.streams.map((x) => x.key)).toEqual(['one/companies', 'one/employees', 'two/companies', 'two/employees']);
    const jobs = await tickAndDrain(s);
    expect(jobs.map((j) => [j.source, j.resource, j.purpose])).toEqual([
      ['two', 'companies', 'backfill'],
      ['two', 'employees', 'backfill'],
    ]);
    expect((await runsOf('two')).map((x) => x.status)).toEqual(['succeeded', 'succeeded']);

    r.write([entry('one', ONE)]);
    expect(await s.reload()).toBe('applied');
    expect(s.scheduler.streams.map((x) => x.source)).not.toContain('two');
    expect(s.scheduler.view('two')).toBeUndefined();
    // Even with its streams due (their state forgotten), nothing is dispatched for it.
    await db.pool.query(`DELETE FROM pmsync.sync_state WHERE source = 'two'`);
    expect((await tickAndDrain(s)).filter((j) => j.source === 'two')).toEqual([]);
    // Its rows stay.
    expect((await db.pool.query(`SELECT 1 FROM companies WHERE source = 'two'`)).rowCount).toBe(SIZES.companies);
  });

  it("records each stream's target for the freshness view at start and on every reload", async () => {
    const r = rig();
    r.write([entry('one', ONE)], { schedules: { maxStalenessMinutes: 45 } });
    await start(r);
    const targets = async () =>
      (
        await db.pool.query<{ key: string; table_name: string; target_minutes: number | null }>(
          `SELECT source || '/' || resource AS key, table_name, target_minutes FROM pmsync.stream_targets ORDER BY 1`,
        )
      ).rows;
    expect(await targets()).toEqual([
      { key: 'one/companies', table_name: 'companies', target_minutes: 45 },
      { key: 'one/employees', table_name: 'employees', target_minutes: 45 },
    ]);
    r.write([entry('one', ONE, { streams: ['employees'] }), entry('two', TWO)], {
      schedules: { maxStalenessMinutes: 45, overrides: [{ resource: 'employees', maxStalenessMinutes: 20 }] },
    });
    expect(await serve!.reload()).toBe('applied');
    expect(await targets()).toEqual([
      { key: 'one/employees', table_name: 'employees', target_minutes: 20 },
      { key: 'two/companies', table_name: 'companies', target_minutes: 45 },
      { key: 'two/employees', table_name: 'employees', target_minutes: 20 },
    ]);
    const view = await db.pool.query<{ source: string; table_name: string }>(
      `SELECT source, table_name FROM public.pmsync_freshness WHERE target_minutes = 20 ORDER BY source`,
    );
    expect(view.rows).toEqual([
      { source: 'one', table_name: 'employees' },
      { source: 'two', table_name: 'employees' },
    ]);
  });

  it('reads the config file when a run names a source it does not know, and drops the run if it is still unknown', async () => {
    const r = rig();
    r.write([entry('one', ONE)]);
    const s = await start(r);
    // Another replica took the new file and dispatched a run of the new source before this one looked.
    r.write([entry('one', ONE), entry('two', TWO)]);
    const job = {
      source: 'two',
      resource: 'companies',
      purpose: 'backfill' as const,
      reason: 'backfill',
      firedAt: new Date().toISOString(),
    };
    await s.dispatcher.dispatch(job);
    await s.dispatcher.drained(db.pool);
    expect((await runsOf('two')).map((x) => [x.resource, x.status])).toEqual([['companies', 'succeeded']]);
    expect(app!.logs.filter((l) => l.includes('"msg":"config reloaded: sources added: two"'))).toHaveLength(1);

    await s.dispatcher.dispatch({ ...job, source: 'ghost' });
    await s.dispatcher.drained(db.pool);
    const dropped = app!.logs.filter((l) => l.includes('"source":"ghost"'));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(/"level":"warn".*"msg":"the source is not configured in this replica; the run is dropped"/);
    expect(await runsOf('ghost')).toEqual([]);
  });

  it('takes a rotated secret file and a new budget at the next run, without a restart', async () => {
    const r = rig();
    const secret = join(r.dir, 'password');
    writeFileSync(secret, 'not-the-password\n');
    r.write([entry('one', ONE, { password: { file: secret }, budget: 100 })]);
    const s = await start(r);
    await tickAndDrain(s);
    expect((await runsOf('one')).map((x) => x.error_code)).toContain('AUTH_FAILED');
    expect((await app!.ledgerFor(app!.config.sources[0]!).snapshot()).budget).toBe(100);

    expect(await s.reload()).toBe('unchanged');
    // The config file is unchanged: the rotated secret file is what the reload notices.
    writeFileSync(secret, `${ONE.password}\n`);
    expect(await s.reload()).toBe('applied');
    expect(app!.logs.filter((l) => l.includes('"msg":"config reloaded: sources changed: one (password)"'))).toHaveLength(1);
    // The refused credentials had paused the source; the new password ends that pause at once.
    expect(app!.logs.filter((l) => l.includes('its connection settings changed: its pause ends'))).toHaveLength(1);

    r.write([entry('one', ONE, { password: { file: secret }, budget: 120 })]);
    expect(await s.reload()).toBe('applied');
    expect(app!.logs.filter((l) => l.includes('"msg":"config reloaded: sources changed: one (budget)"'))).toHaveLength(1);
    expect((await app!.ledgerFor(app!.config.sources[0]!).snapshot()).budget).toBe(120);
    await db.pool.query(`UPDATE pmsync.stream_schedule SET paused_until = NULL, last_fire_at = NULL WHERE source = 'one'`);
    await tickAndDrain(s);
    const runs = await runsOf('one');
    expect(
      runs
        .filter((x) => x.status === 'succeeded')
        .map((x) => x.resource)
        .sort(),
    ).toEqual(STREAMS);
    expect(app!.logs.join('\n')).not.toContain(ONE.password);
  });

  it('applies a stricter column policy to what is stored when the file changes, and refuses a looser one until a restart', async () => {
    const r = rig();
    const key = 'reload-hash-key-Rw4-Tq8-Yp2-Un6-Io3-Pa9';
    r.write([entry('one', ONE)]);
    const s = await start(r);
    await tickAndDrain(s);
    const emails = async () =>
      (await db.pool.query<{ email: string }>(`SELECT email FROM employees WHERE source = 'one' ORDER BY id`)).rows.map((x) => x.email);
    expect((await emails()).every((e) => e.includes('@'))).toBe(true);

    r.write([entry('one', ONE, { privacy: { key, columns: { 'employees.email': 'hash' } } })]);
    expect(await s.reload()).toBe('applied');
    // At once, not at the table's next run.
    expect((await emails()).every((e) => /^[0-9a-f]{64}$/.test(e))).toBe(true);
    expect(app!.logs.filter((l) => l.includes('a stricter privacy policy was applied to what is stored of employees'))).toHaveLength(1);

    r.write([entry('one', ONE)]);
    expect(await s.reload()).toBe('applied');
    expect(app!.logs.filter((l) => l.includes('a running process does not loosen a policy; restart'))).toHaveLength(1);
    // What a run of the table does first, with the configuration now in force.
    await expect(prepareTable(app!.pool, app!.logger, app!.config.sources[0]!, employees)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    expect((await emails()).every((e) => /^[0-9a-f]{64}$/.test(e))).toBe(true);
    expect(app!.logs.join('\n')).not.toContain(key);
  });

  it('refreshes a record of a source this replica learns of when its refresh job arrives', async () => {
    const r = rig();
    r.write([entry('one', ONE)]);
    await start(r, { webhooks: true });
    // Another replica took the new file, accepted a delivery for the new source and queued its refresh.
    r.write([entry('one', ONE), entry('two', TWO)]);
    const jobs = await openJobQueue(
      { databaseUrl: db.url, pool: db.pool, logger: app!.logger },
      { mode: 'work', superviseSeconds: refreshSuperviseSeconds(app!.config.webhooks), connections: 4 },
    );
    try {
      const queue = await openRefreshQueue(jobs, app!.config.webhooks);
      const [customer] = sim.tenant(TWO.apikey).list('customers', { limit: 1 }) as Array<{ CustomerId: string }>;
      await queue.enqueue({ source: 'two', resource: 'customers', id: customer!.CustomerId });
      await eventually(
        async () =>
          (await db.pool.query(`SELECT 1 FROM customers WHERE source = 'two' AND id = $1`, [customer!.CustomerId])).rowCount === 1
            ? true
            : undefined,
        'the refreshed record',
      );
      expect(app!.config.sources.map((x) => x.name)).toEqual(['one', 'two']);

      // Unknown even after the look: dead-lettered at once, as before.
      await queue.enqueue({ source: 'ghost', resource: 'customers', id: customer!.CustomerId });
      const [dead] = await eventually(async () => {
        const d = await listDeadLetters(db.pool);
        return d.length > 0 ? d : undefined;
      }, 'the dead letter');
      expect(dead).toMatchObject({ source: 'ghost', error: expect.stringMatching(/no longer a configured core source/) });
    } finally {
      await jobs.stop();
    }
  });
});
