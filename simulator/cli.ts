/**
 * The simulator's command line: the demo accounts of the three APIs on one
 * port until interrupted. Run with `npm run simulator -- --port 4010 ...`;
 * it lives beside pmsync, not in it (see main.ts).
 */
import { Command, InvalidArgumentError } from 'commander';
import { DEMO_CORE, DEMO_PRO, DEMO_SUBSET, isCoreResource, startSimulator } from './index.ts';
import type { CoreResource, CoreTenantOptions, ProPracticeOptions } from './index.ts';

interface SimulateOptions {
  port: number;
  host: string;
  seed: number;
  customers?: number;
  size: Partial<Record<CoreResource, number>>;
  dataHeaders: boolean;
  quota?: number;
  practices: number;
  timeZone: string;
}

function count(text: string): number {
  if (!/^\d+$/.test(text)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(text);
}

function addSize(text: string, sizes: Partial<Record<CoreResource, number>>): Partial<Record<CoreResource, number>> {
  const match = /^([a-z]+)=(\d+)$/i.exec(text.trim());
  const resource = match?.[1]?.toLowerCase() ?? '';
  if (match === null || !isCoreResource(resource)) {
    throw new InvalidArgumentError('expected RESOURCE=N with a Core resource such as customers=100000');
  }
  return { ...sizes, [resource]: Number(match[2]) };
}

export function simulatorCommand(): Command {
  return new Command('simulator')
    .description('run the local simulator of the Core, Subset and Pro APIs until interrupted')
    .option('--port <n>', 'port to listen on', count, 4010)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated data', count, 1)
    .option('--customers <n>', 'customers in the Core account', count)
    .option('--size <resource=n>', 'record count of a Core resource (repeatable)', addSize, {})
    .option('--no-data-headers', 'omit the Data* paging headers on every list')
    .option('--quota <n>', 'daily request quota of each account (0 = unlimited)', count)
    .option('--practices <n>', 'number of Pro practices', count, 1)
    .option('--time-zone <zone>', 'IANA time zone of Core timestamps', 'UTC')
    .action(async (opts: SimulateOptions) => {
      const sizes = { ...opts.size, ...(opts.customers === undefined ? {} : { customers: opts.customers }) };
      const shared: Partial<CoreTenantOptions> = {
        sizes,
        dataHeaders: opts.dataHeaders,
        timeZone: opts.timeZone,
        ...(opts.quota === undefined ? {} : { dailyQuota: opts.quota }),
      };
      const practices: ProPracticeOptions[] = Array.from({ length: opts.practices }, (_, i) => ({
        token: i === 0 ? DEMO_PRO.token : `${DEMO_PRO.token}-${i + 1}`,
        practiceId: DEMO_PRO.practiceId + i,
      }));
      const sim = await startSimulator({
        host: opts.host,
        port: opts.port,
        seed: opts.seed,
        tenants: [
          { ...DEMO_CORE, ...shared },
          { ...DEMO_SUBSET, ...shared },
        ],
        practices,
      });
      const out = process.stdout;
      out.write(`Simulator listening on ${sim.url} (seed ${opts.seed})\n\n`);
      out.write(
        `Core    ${sim.coreBaseUrl()}\n        apikey=${DEMO_CORE.apikey} username=${DEMO_CORE.username} password=${DEMO_CORE.password}\n`,
      );
      out.write(
        `Subset  ${sim.subsetBaseUrl(DEMO_SUBSET.subsetName)}\n        apikey=${DEMO_SUBSET.apikey} username=${DEMO_SUBSET.username} password=${DEMO_SUBSET.password}\n`,
      );
      for (const practice of practices) {
        out.write(`Pro     ${sim.proBaseUrl()}/practices/${practice.practiceId}\n        Authorization: ${practice.token}\n`);
      }
      out.write(`Control ${sim.url}/__sim/ (POST touch, create, faults; GET stats, health)\n\nPress Ctrl+C to stop.\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await sim.close();
      out.write('Simulator stopped.\n');
    });
}
