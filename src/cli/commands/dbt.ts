import { writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { configFrom, fail, requireSources } from '../shared.ts';

interface DbtSourcesCliOptions {
  out?: string;
  schema: string;
  loadedAtQuery?: boolean;
}

export function dbtCommand(): Command {
  const dbt = new Command('dbt').description('files for dbt projects that model the synced tables');
  dbt
    .command('sources')
    .description(
      "write a dbt sources.yml for the configured streams: tables, column descriptions, primary keys, loaded_at_field and freshness thresholds from each stream's target (docs/analysts.md)",
    )
    .option('-o, --out <file>', 'write to this file instead of stdout')
    .option('--schema <name>', 'the schema the tables live in', 'public')
    .option(
      '--loaded-at-query',
      'use loaded_at_query on the pmsync_freshness view (dbt 1.10 and later) instead of loaded_at_field synced_at',
    )
    .action(async (opts: DbtSourcesCliOptions, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        requireSources(config);
        const { dbtSources, toYaml } = await import('../../analysts/dbt-sources.ts');
        const text = toYaml(dbtSources(config, { schema: opts.schema, loadedAtQuery: opts.loadedAtQuery }));
        if (opts.out) {
          writeFileSync(opts.out, text);
          process.stderr.write(`wrote ${opts.out}\n`);
        } else {
          process.stdout.write(text);
        }
      } catch (err) {
        fail(err);
      }
    });
  return dbt;
}
