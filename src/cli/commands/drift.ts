import { Command } from 'commander';
import { driftFindings, type StoredFinding } from '../../state/drift.ts';
import { acceptDrift } from '../../sync/drift-record.ts';
import { settingsFor, tableStreams } from '../../sync/table-settings.ts';
import { tableNames, configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';

/** The report as text: problems first, then the fields kept in raw only, one line per table. */
export function describeDrift(findings: StoredFinding[], indent = '  '): string {
  const lines: string[] = [];
  for (const f of findings.filter((x) => x.kind !== 'unmapped_field'))
    lines.push(`${indent}${f.kind.replace('_', ' ')}: ${f.detail} (since ${f.since})`);
  const unmapped = findings.filter((x) => x.kind === 'unmapped_field');
  const rawOnly = unmapped.filter((x) => x.signature !== 'not kept').map((x) => x.subject);
  const notKept = unmapped.filter((x) => x.signature === 'not kept').map((x) => x.subject);
  if (rawOnly.length > 0) lines.push(`${indent}in raw only: ${rawOnly.join(', ')}`);
  if (notKept.length > 0) lines.push(`${indent}not stored (raw keeps declared fields only): ${notKept.join(', ')}`);
  return lines.map((l) => `${l}\n`).join('');
}

export function driftCommand(): Command {
  return new Command('drift')
    .description(
      'show the schema-drift report: fields in raw no column reads, columns left empty while raw has a likely field, fields gone, types changed',
    )
    .option('--source <name>', 'only this source')
    .option('--table <name...>', 'only these tables, by table or resource name')
    .option('--accept', 'take the current shape as normal: forget fields that disappeared and accept changed types')
    .option('--json', 'print JSON')
    .action(async (opts: { source?: string; table?: string[]; accept?: boolean; json?: boolean }, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        requireSources(config);
        const sources = findSource(config, opts.source);
        const tables = tableNames(sources, opts.table);
        await withApp(config, async (app) => {
          const wanted = (table: string) => !tables || tables.includes(table);
          if (opts.accept) {
            for (const source of sources) {
              for (const stream of tableStreams(source).filter((s) => wanted(s.table.name))) {
                await acceptDrift(app.pool, app.logger, { source: source.name, stream, settings: settingsFor(source, stream) });
              }
            }
          }
          const all = await driftFindings(
            app.pool,
            sources.map((s) => s.name),
          );
          const report = sources.map((s) => ({
            source: s.name,
            tables: tableStreams(s)
              .filter((t) => wanted(t.table.name))
              .map((t) => ({ table: t.table.name, findings: all.get(`${s.name}/${t.table.name}`) ?? [] })),
          }));
          if (opts.json) {
            process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
            return;
          }
          for (const s of report) {
            process.stdout.write(`source ${s.source}\n`);
            const withFindings = s.tables.filter((t) => t.findings.length > 0);
            if (withFindings.length === 0) process.stdout.write('  no drift seen\n');
            for (const t of withFindings) process.stdout.write(`  ${t.table}\n${describeDrift(t.findings, '    ')}`);
          }
        });
      } catch (err) {
        fail(err);
      }
    });
}
