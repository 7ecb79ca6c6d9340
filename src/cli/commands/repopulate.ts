import { Command } from 'commander';
import { withTransaction } from '../../db/pool.ts';
import { repopulateTable } from '../../db/repopulate.ts';
import { recordRepopulated } from '../../sync/drift-record.ts';
import { applyPolicies } from '../../sync/privacy-policies.ts';
import { effectiveFields, settingsFor, tableStreams } from '../../sync/table-settings.ts';
import { tableNames, configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';

export function repopulateCommand(): Command {
  return new Command('repopulate')
    .description('re-derive typed columns from each row\'s raw record (after changing a source\'s "columns"), in SQL: no API requests')
    .option('--source <name>', 'only this source')
    .option('--table <name...>', "only these tables, by table or resource name (default: every table of the source's kind)")
    .addHelpText(
      'after',
      `
Every typed column read from one raw field is recomputed from raw, with the
source's "columns" overrides applied, in one UPDATE per table (and one for its
_history table); only rows whose value changes are written. Values a sync would
refuse become null. The schema-drift report of each table is refreshed from the
rows: a column the overrides leave empty in every row is reported at once.`,
    )
    .action(async (opts: { source?: string; table?: string[] }, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        requireSources(config);
        const sources = findSource(config, opts.source);
        const tables = tableNames(sources, opts.table);
        await withApp(config, async (app) => {
          await applyPolicies(app.pool, app.logger, sources);
          for (const source of sources) {
            for (const stream of tableStreams(source).filter((s) => !tables || tables.includes(s.table.name))) {
              const settings = settingsFor(source, stream);
              const fields = effectiveFields(stream, settings);
              const changed = await withTransaction(app.pool, (tx) => repopulateTable(tx, stream.table, fields, source.name));
              // The recomputed columns' fill is read from the rows now: an override that empties one is flagged at once.
              await recordRepopulated(app.pool, app.logger, { source: source.name, stream, settings }, Object.keys(fields));
              process.stdout.write(
                `${source.name}/${stream.table.name}: ${changed.rows} row(s) changed, ${changed.versions} history version(s) changed\n`,
              );
            }
          }
        });
      } catch (err) {
        fail(err);
      }
    });
}
