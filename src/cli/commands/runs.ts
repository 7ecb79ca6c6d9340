/** `pmsync runs`: prints the runs src/status/runs.ts reads, as a table or JSON. */
import { Command, InvalidArgumentError } from 'commander';
import type { ListedRun } from '../../state/runs.ts';
import { readRuns } from '../../status/runs.ts';
import { configFrom, fail, withApp } from '../shared.ts';

interface RunsCliOptions {
  limit: number;
  source?: string;
  resource?: string;
  status?: string;
  json?: boolean;
}

function duration(r: ListedRun): string {
  if (!r.endedAt) return 'running';
  const s = Math.round((r.endedAt.getTime() - r.startedAt.getTime()) / 1000);
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${(s / 3600).toFixed(1)}h`;
}

export function formatRuns(rows: ListedRun[]): string {
  if (rows.length === 0) return 'No runs recorded yet.\n';
  const header = ['id', 'started (UTC)', 'source/resource', 'mode', 'status', 'took', 'pages', 'req', 'ins', 'upd', 'same', 'rej', 'error'];
  const lines = rows.map((r) => [
    String(r.id),
    r.startedAt.toISOString().slice(0, 19).replace('T', ' '),
    `${r.source}/${r.resource}`,
    r.mode,
    r.status,
    duration(r),
    String(r.pages),
    String(r.requests),
    String(r.inserted),
    String(r.updated),
    String(r.unchanged),
    String(r.rejected),
    r.errorCode ? `${r.errorCode}: ${(r.errorMessage ?? '').replace(/\s+/g, ' ').slice(0, 80)}` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const numeric = new Set([0, 6, 7, 8, 9, 10, 11]);
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[fmt(header), ...lines.map(fmt)].join('\n')}\n`;
}

function positive(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new InvalidArgumentError('expected a positive number');
  return Number(text);
}

export function runsCommand(): Command {
  return new Command('runs')
    .description('list recent runs from pmsync.runs, newest first: status, duration, pages, requests, row counts and errors')
    .option('-n, --limit <n>', 'how many runs', positive, 20)
    .option('-s, --source <name>', 'only this source')
    .option('-r, --resource <name>', 'only this resource (or the resource writing this table)')
    .option('--status <status>', 'only runs with this status (running, succeeded, failed, quota_exhausted, interrupted)')
    .option('--json', 'print JSON')
    .action(async (opts: RunsCliOptions, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        await withApp(config, async (app) => {
          const rows = await readRuns(app, opts);
          process.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : formatRuns(rows));
        });
      } catch (err) {
        fail(err);
      }
    });
}
