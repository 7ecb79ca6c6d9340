/**
 * Pins that defeat the budget. One Core practice configured from the
 * environment alone, as docker compose does: with .env.example as shipped
 * (every stream scheduled by budget) it is ok; with the pins the example used
 * to set (every incremental stream every 15 minutes, full refreshes nightly)
 * the pins plan more than the budget has left, and `pmsync status`, serve's
 * status page and /metrics say "over budget", what is planned against what,
 * and what to do. The CLI runs as a child process; the page and the metrics
 * are fetched over HTTP; both read one PostgreSQL after real syncs against
 * the simulator.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import type { SourceStatus } from '../../src/status/detail.ts';
import type { FleetSummary } from '../../src/status/fleet.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { cliEnv, ROOT, runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { openTestApp, TestClock, type TestApp } from '../support/harness.ts';

const TENANT = { apikey: 'pins-key-Q7', username: 'pins.user', password: 'pins-pass-W3', variant: 'core' as const };
/** What .env.example set before: every stream pinned, the budget scheduler off. */
const OLD_PINS = { PMSYNC_SCHEDULE_INCREMENTAL: '*/15 * * * *', PMSYNC_SCHEDULE_FULL: '0 2 * * *' };
/** 10:00 to 23:45: the fires of a 15-minute pin left from 09:45 until the quota day resets at midnight UTC. */
const FIRES_LEFT = 56;

const clock = new TestClock('2026-03-12T09:00:00.000Z');
let sim: Simulator;
let db: TestDatabase;

/** The active lines of .env.example, as compose passes them. */
function envExample(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(ROOT, '.env.example'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** .env.example filled in for the simulator's practice, with `extra` on top. */
function exampleEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...envExample(),
    CORE_BASE_URL: sim.coreBaseUrl(),
    CORE_APIKEY: TENANT.apikey,
    CORE_USERNAME: TENANT.username,
    CORE_PASSWORD: TENANT.password,
    DATABASE_URL: db.url,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

const cli = (extra: Record<string, string>, ...args: string[]) =>
  runCli(args, cliEnv({ ...exampleEnv(extra), NODE_ENV: 'test', PMSYNC_TEST_NOW: clock.iso() }));

beforeAll(async () => {
  sim = await startSimulator({
    seed: 11,
    now: clock.now,
    tenants: [{ ...TENANT, sizes: { companies: 2, customers: 30, orders: 20, appointments: 30 } }],
  });
  db = await createTestDatabase();
  const sync = await cli({}, 'sync');
  expect(sync.code, sync.stderr).toBe(0);
  clock.set('2026-03-12T09:45:00.000Z');
});

afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('pmsync status', () => {
  it('with .env.example as shipped: every stream by budget, and ok', async () => {
    const res = await cli({}, 'status');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^ {2}health: ok$/m);
    expect(res.stdout).not.toContain('pinned');

    const json = JSON.parse((await cli({}, 'status', '--json')).stdout) as SourceStatus[];
    expect(json).toHaveLength(1);
    expect(json[0]!.health).toMatchObject({ verdict: 'ok', reasons: [], pinned: null });
    expect(json[0]!.resources.map((r) => r.schedule!.mode)).toEqual(json[0]!.resources.map(() => 'budget'));
  });

  it('with every stream pinned: over budget, with what the pins plan, against what is left, and what to do', async () => {
    const json = JSON.parse((await cli(OLD_PINS, 'status', '--json')).stdout) as SourceStatus[];
    const [s] = json;
    const incremental = s!.resources.filter((r) => r.schedule?.cron === '*/15 * * * *').map((r) => r.resource);
    const full = s!.resources.filter((r) => r.schedule?.cron === '0 2 * * *').map((r) => r.resource);
    expect(incremental.length + full.length).toBe(s!.resources.length);
    expect(incremental.length).toBeGreaterThan(3);
    // No check has run yet (the first pass reads as backfill): each check is planned at one request.
    const planned = FIRES_LEFT * incremental.length;
    const left = s!.budget.budget - s!.budget.used;
    expect(s!.budget.budget).toBe(150);
    expect(planned).toBeGreaterThan(left);
    const reason =
      `pinned schedules of ${incremental.slice(0, 3).join(', ')} and ${incremental.length - 3} more plan ${planned} requests ` +
      `for the rest of the quota day, more than the ${left} left of the budget of 150 a day: ` +
      'schedule them by budget (remove the cron pins) or raise the budget';
    expect(s!.health).toMatchObject({
      verdict: 'over budget',
      reasons: [reason],
      pinned: { planned, limit: { kind: 'budget', left, perDay: 150 }, over: planned - left },
    });
    // The scheduler's own plan counts the same pins.
    expect(s!.budget.planned.check).toBeGreaterThanOrEqual(planned);

    const res = await cli(OLD_PINS, 'status');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`  health: over budget (${reason})\n`);
    expect(res.stdout).toMatch(
      new RegExp(`planned for the rest of the day \\(check \\d+, webhook 0, full \\d+; ${planned} of them by pinned streams\\)`),
    );

    const summary = JSON.parse((await cli(OLD_PINS, 'status', '--json', '--summary')).stdout) as FleetSummary;
    expect(summary.totals).toEqual({ sources: 1, failing: 0, overBudget: 1, behind: 0, ok: 0 });
    expect(summary.sources[0]!.reasons).toEqual([reason]);
  });

  it('--check still exits 0: the source answers, and the verdict is for reading', async () => {
    const res = await cli(OLD_PINS, 'status', '--check', '--summary');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^core\s+over budget\s.*pinned schedules of /m);
  });
});

describe("serve's status page and /metrics", () => {
  let app: TestApp;
  let serve: RunningServe;

  beforeAll(async () => {
    const loaded = loadConfig(STREAM_REGISTRY, { env: exampleEnv(OLD_PINS) });
    const config = { ...loaded, serve: { ...loaded.serve, port: 0, host: '127.0.0.1' } };
    app = await openTestApp(config, { now: clock.now });
    serve = await startServe(app, config, { manualTicks: true });
    // One tick: every pin fires for the first time, and the checks it sends are counted in the budget.
    await serve.scheduler.tick();
    await serve.dispatcher.drained(app.pool, 20);
    clock.advance(2 * 60_000);
  });
  afterAll(async () => {
    await serve?.stop();
    await app?.close();
  });

  const gauge = (text: string, name: string) => {
    const m = new RegExp(`^${name}\\{source="core"\\} (\\d+)$`, 'm').exec(text);
    expect(m, name).not.toBeNull();
    return Number(m![1]);
  };

  it('say over budget with the same numbers as status', async () => {
    const [status] = JSON.parse((await cli(OLD_PINS, 'status', '--json')).stdout) as SourceStatus[];
    const pinned = status!.health!.pinned!;
    expect(status!.budget.used).toBeGreaterThan(0);
    expect(pinned.over).toBeGreaterThan(0);

    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    expect(gauge(metrics, 'pmsync_requests_planned_pinned')).toBe(pinned.planned);
    expect(gauge(metrics, 'pmsync_pinned_over_budget')).toBe(pinned.over);
    expect(gauge(metrics, 'pmsync_pinned_over_budget')).toBe(
      pinned.planned - (gauge(metrics, 'pmsync_budget') - gauge(metrics, 'pmsync_budget_used')),
    );

    const html = await (await fetch(`${serve.url}/`)).text();
    expect(html).toContain('<tr data-source="core" data-verdict="over budget">');
    expect(html).toContain('1 source: 0 failing, 1 over budget, 0 behind, 0 ok');
    expect(html).toContain(
      `plan ${pinned.planned} requests for the rest of the quota day, more than the ${pinned.limit!.left} left of the budget of 150 a day: ` +
        'schedule them by budget (remove the cron pins) or raise the budget',
    );
    expect(html).toMatch(
      new RegExp(
        `<div class="fact warn" data-fact="planned"><dt>Planned for the rest of the day</dt><dd>[\\d,]+ requests of the budget \\(${pinned.planned} by pinned streams, more than the ${pinned.limit!.left} left of the budget\\)`,
      ),
    );
  });
});
