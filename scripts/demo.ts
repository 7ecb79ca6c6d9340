/**
 * `npm run demo`: pmsync against its local
 * simulator, for a newcomer with nothing set up. It needs both sides, so it
 * lives here rather than in pmsync's CLI (the product does not carry the
 * simulator) or in the simulator.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { App } from '../src/app.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../src/config/schema.ts';
import { printResults, runSync } from '../src/cli/commands/sync.ts';
import { DEMO_SOURCE } from '../src/cli/no-sources.ts';
import { setUpProcess } from '../src/cli/process.ts';
import { configFrom, fail, withApp } from '../src/cli/shared.ts';
import { loadConfig } from '../src/config/load.ts';
import { STREAM_REGISTRY } from '../src/sync/stream-registry.ts';
import { type Config, type CoreSourceConfig } from '../src/config/schema.ts';
import { EMBEDDED_DEFAULT_PORT } from '../src/db/embedded.ts';
import { countVersions } from '../src/db/history.ts';
import { countRows, deleteSourceRows } from '../src/db/rows.ts';
import { EXIT } from '../src/errors.ts';
import { forgetKeyUsage, keyFingerprint } from '../src/state/quota.ts';
import { forgetSource } from '../src/state/sources.ts';
import { REST_STREAMS } from '../src/sync/streams/index.ts';
import { DEMO_CORE, startSimulator } from '../simulator/index.ts';

/** The query the demo suggests: each changed customer's versions, old email then new. */
const BEFORE_AFTER =
  'SELECT id, first_name, last_name, email, valid_from, valid_to FROM customers_history ' +
  "WHERE source = 'demo' AND id IN (SELECT id FROM customers_history WHERE source = 'demo' AND NOT is_current) ORDER BY id, valid_from LIMIT 6";

function demoSource(baseUrl: string): CoreSourceConfig {
  return {
    kind: 'core',
    name: DEMO_SOURCE,
    baseUrl,
    apikey: DEMO_CORE.apikey,
    username: DEMO_CORE.username,
    password: DEMO_CORE.password,
    credentialsIn: 'header',
    dailyQuota: 1000,
    budget: 150,
    quota: { reservePercent: 10, timeZone: 'UTC', resetHour: 0 },
    limiter: { maxConcurrent: 2, minTimeMs: 0 },
    timeZone: 'UTC',
    overlapSeconds: 600,
    // The demo changes records and syncs again within seconds, so it reads right up to now.
    lagSeconds: 0,
    requestTimeoutMs: 30_000,
    maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
    fullRefresh: [],
    columns: {},
    // Customers keep their versions, so the demo can show what changed between the two syncs.
    history: ['customers'],
    appointments: { historyStart: '2000-01-01', horizonDays: 365 },
    webhook: {},
  };
}

async function resetDemoRows(app: App): Promise<void> {
  for (const s of REST_STREAMS) await deleteSourceRows(app.pool, s.table, DEMO_SOURCE);
  await forgetSource(app.pool, DEMO_SOURCE);
  // Only the demo's own gateway key: the ledger of real accounts in the same database must survive.
  await forgetKeyUsage(app.pool, keyFingerprint(DEMO_CORE.apikey));
}

async function printTables(app: App): Promise<void> {
  process.stdout.write('\nRows per table (source "demo"):\n');
  for (const s of REST_STREAMS) {
    const n = await countRows(app.pool, s.table, DEMO_SOURCE);
    process.stdout.write(`  ${s.table.name.padEnd(22)} ${String(n).padStart(7)}\n`);
  }
  const v = await countVersions(app.pool, 'customers', DEMO_SOURCE);
  process.stdout.write(
    `  ${'customers_history'.padEnd(22)} ${String(v.versions).padStart(7)}  (history mode: ${v.changed} customers have an older version)\n`,
  );
}

function demoCommand(): Command {
  return new Command('demo')
    .description(
      'sync a seeded local simulator into PostgreSQL (embedded unless DATABASE_URL is set), change some records, sync again, and show what landed',
    )
    .option(
      '--customers <n>',
      'customers in the simulated account',
      (v) => {
        if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a number of customers');
        return Number(v);
      },
      2500,
    )
    .addOption(
      new Option(
        '--log-format <format>',
        'log lines on stderr: pretty (default on a terminal) or json (default elsewhere; or PMSYNC_LOG_FORMAT)',
      ).choices(['json', 'pretty']),
    )
    .option('-q, --quiet', 'print only problems: errors in the log, no progress, and of a sync only the streams that did not succeed')
    .action(async (opts: { customers: number }, cmd: Command) => {
      const sim = await startSimulator({
        seed: 42,
        tenants: [{ ...DEMO_CORE, variant: 'core', sizes: { customers: opts.customers } }],
      });
      try {
        const base = loadConfig(STREAM_REGISTRY, { env: { ...process.env, CORE_BASE_URL: '', CORE_APIKEY: '', CORE_USERNAME: '' } });
        // The demo speaks to a person: logs only for warnings unless LOG_LEVEL asks for more.
        const config: Config = configFrom(cmd, { defaultLevel: 'warn', config: { ...base, sources: [demoSource(sim.coreBaseUrl())] } });
        await withApp(config, async (app) => {
          await resetDemoRows(app);
          process.stdout.write(
            `Simulator: ${sim.coreBaseUrl()} (seeded, ${opts.customers} customers)\nDatabase:  ${app.databaseUrl}\n\n1) First sync: every list, page by page\n`,
          );
          const first = await runSync(app, config, {});
          printResults(first.results);
          const afterFirst = (await app.ledgerFor(config.sources[0]!).snapshot()).used;

          const tenant = sim.tenant(DEMO_CORE.apikey);
          // Changes a person can see in the history: 25 customers move to a new email address.
          for (const c of tenant.touch('customers', 25)) {
            const name = `${String(c.FirstName ?? 'customer')}.${String(c.LastName ?? c.CustomerId)}`
              .toLowerCase()
              .replace(/[^a-z0-9.]/g, '');
            tenant.update('customers', String(c.CustomerId), { Email: `${name}@new-provider.example` });
          }
          tenant.touch('orders', 10);
          for (let i = 0; i < 5; i++) tenant.create('customers');
          await new Promise((r) => setTimeout(r, 1100));
          process.stdout.write(
            '\n2) 30 customers (25 with a new email address, 5 new) and 10 orders changed at the source; incremental sync:\n',
          );
          const second = await runSync(app, config, {});
          printResults(second.results);
          const total = (await app.ledgerFor(config.sources[0]!).snapshot()).used;

          await printTables(app);
          process.stdout.write(
            `\nRequests: ${afterFirst} for the first sync, ${total - afterFirst} for the incremental one (daily quota 1000).\n` +
              `\nTry a query:\n  psql ${app.embedded ? app.databaseUrl : '"$DATABASE_URL"'} -c "SELECT first_name, last_name, email, synced_at FROM customers ORDER BY synced_at DESC LIMIT 5"\n` +
              `and the email addresses the changed customers had before:\n  psql ${app.embedded ? app.databaseUrl : '"$DATABASE_URL"'} -c "${BEFORE_AFTER}"\n` +
              (app.embedded
                ? `\nThe embedded database keeps its data in ${config.dataDir}/pgdata. Start it again for psql with:\n  npm run pmsync -- db             (add --port N when port ${EMBEDDED_DEFAULT_PORT} is taken)\n`
                : ''),
          );
          process.exitCode = Math.max(first.exitCode, second.exitCode);
        });
      } catch (err) {
        fail(err);
      } finally {
        await sim.close();
      }
    });
}

// Usage errors exit 2, as on pmsync's own commands.
setUpProcess();
await demoCommand()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.OK : EXIT.USAGE))
  .showHelpAfterError()
  .parseAsync(process.argv);
