/**
 * Runs the benchmarks and writes their report (see bench/RESULTS.md for what
 * each part proves and how to run it).
 *
 *   node bench/run.ts --quick            every part, small sizes (a few minutes)
 *   node bench/run.ts --full             every part at full size
 *   node bench/run.ts --full --only write,e2e
 *   node bench/run.ts --quick --only e2e --e2e-rows 1000000   one end-to-end size, once per setting
 *   node bench/run.ts --only e2e --e2e-rows 1000000 --e2e-start bin,defaults,old-1g --e2e-reps 3
 *                                        heap flags side by side, alternated
 *
 * The report goes to stdout and to bench/out/<mode>-<timestamp>.md, with the
 * raw figures beside it as .json. Everything talks to loopback only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startBenchServer } from './support/db.ts';
import { parseStarts, type StartName } from './support/proc.ts';

const PARTS = ['economy', 'write', 'e2e', 'webhooks', 'schedule', 'privacy'] as const;
type Part = (typeof PARTS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    full: { type: 'boolean', default: false },
    only: { type: 'string' },
    // The end-to-end sizes, instead of the mode's (comma-separated row counts).
    'e2e-rows': { type: 'string' },
    // How the pmsync process is started, compared (comma-separated: bin, defaults, old-1g; bench/support/proc.ts).
    'e2e-start': { type: 'string' },
    // Repetitions of each end-to-end size and start, instead of the mode's.
    'e2e-reps': { type: 'string' },
  },
});
const full = values.full === true;
const mode = full ? 'full' : 'quick';
const only = values.only ? values.only.split(',').map((s) => s.trim()) : [...PARTS];
for (const p of only) {
  if (!(PARTS as readonly string[]).includes(p)) {
    process.stderr.write(`unknown part "${p}"; parts: ${PARTS.join(', ')}\n`);
    process.exit(2);
  }
}
const selected = (p: Part) => only.includes(p);
const e2eRows = values['e2e-rows']?.split(',').map((s) => Number(s.trim()));
if (e2eRows?.some((n) => !Number.isInteger(n) || n <= 0)) {
  process.stderr.write(`--e2e-rows: "${values['e2e-rows']}" is not a list of row counts\n`);
  process.exit(2);
}

const e2eReps = values['e2e-reps'] === undefined ? undefined : Number(values['e2e-reps']);
if (e2eReps !== undefined && (!Number.isInteger(e2eReps) || e2eReps <= 0)) {
  process.stderr.write(`--e2e-reps: "${values['e2e-reps']}" is not a positive whole number\n`);
  process.exit(2);
}
let e2eStarts: StartName[] | undefined;
try {
  e2eStarts = values['e2e-start'] ? parseStarts(values['e2e-start']) : undefined;
} catch (err) {
  process.stderr.write(`--e2e-start: ${(err as Error).message}\n`);
  process.exit(2);
}

const log = (line: string) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
const started = performance.now();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const extra = [
  values.only ? `--only ${values.only}` : '',
  e2eRows ? `--e2e-rows ${values['e2e-rows']}` : '',
  e2eStarts ? `--e2e-start ${e2eStarts.join(',')}` : '',
  e2eReps ? `--e2e-reps ${e2eReps}` : '',
]
  .filter(Boolean)
  .join(' ');
const command = `npm run ${full ? 'bench:full' : 'bench'}${extra ? ` -- ${extra}` : ''}`;

const server = await startBenchServer();
log(`PostgreSQL: ${server.label}`);
const sections: string[] = [];
const data: Record<string, unknown> = {};
try {
  if (selected('economy')) {
    const { runEconomy } = await import('./economy.ts');
    const r = await runEconomy(server, { rows: full ? 100_000 : 10_000, log });
    sections.push(`## 1. Request economy\n\n${r.markdown}`);
    data.economy = r.data;
  }
  if (selected('write')) {
    const { runWrite } = await import('./write.ts');
    const r = await runWrite(server, {
      sizes: full ? [10_000, 100_000, 1_000_000] : [10_000],
      reps: (size) => (!full || size >= 100_000 ? 3 : 5),
      batches: [100, 500, 1000, 5000],
      curveSize: full ? 100_000 : 10_000,
      prismaSample: full ? 5_000 : 1_000,
      log,
    });
    sections.push(`## 2. Write throughput\n\n${r.markdown}`);
    data.write = r.data;
  }
  if (selected('e2e')) {
    const { runEndToEnd } = await import('./e2e.ts');
    const r = await runEndToEnd(server, {
      sizes: e2eRows ?? (full ? [100_000, 1_000_000] : [100_000]),
      reps: (rows) => e2eReps ?? (!full ? 1 : rows >= 1_000_000 ? 2 : 3),
      // By default pmsync as shipped beside Node's defaults.
      variants: (e2eStarts ?? (['bin', 'defaults'] as const)).map((start) => ({ start, nodeOptions: '' })),
      log,
    });
    sections.push(`## 3. End to end\n\n${r.markdown}`);
    data.e2e = r.data;
  }
  if (selected('webhooks')) {
    const { runWebhooks } = await import('./webhooks.ts');
    const r = await runWebhooks(server, { ackSeconds: full ? 30 : 5, burst: 1000, concurrencies: full ? [2, 8] : [2], log });
    sections.push(`## 4. Webhooks\n\n${r.markdown}`);
    data.webhooks = r.data;
  }
  if (selected('schedule')) {
    const { runSchedule } = await import('./schedule.ts');
    const r = await runSchedule(server, { full, log });
    sections.push(`## 5. Scheduling: requests and freshness over a practice day\n\n${r.markdown}`);
    data.schedule = r.data;
  }
  if (selected('privacy')) {
    const { runPrivacy } = await import('./privacy.ts');
    const r = await runPrivacy(server, { size: full ? 100_000 : 10_000, reps: 3, log });
    sections.push(`## 6. Write cost of column policies\n\n${r.markdown}`);
    data.privacy = r.data;
  }
} finally {
  await server.stop();
}

const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
const header = [
  `# pmsync benchmarks (${mode})`,
  '',
  `- Command: \`${command}\``,
  `- Date: ${new Date().toISOString()}`,
  `- Machine: ${cpus().length} cores (${cpuModel}), ${(totalmem() / 1024 ** 3).toFixed(1)} GiB memory, ${process.platform} ${process.arch}, Node ${process.version}`,
  `- PostgreSQL: ${server.label}; ${Object.entries(server.settings)
    .filter(([k]) => k !== 'server_version')
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
  `- Wall time: ${((performance.now() - started) / 1000).toFixed(0)} s`,
  '',
].join('\n');
const markdown = `${header}\n${sections.join('\n\n')}\n`;
const outDir = join(ROOT, 'bench', 'out');
mkdirSync(outDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
writeFileSync(join(outDir, `${mode}-${stamp}.md`), markdown);
writeFileSync(
  join(outDir, `${mode}-${stamp}.json`),
  JSON.stringify({ mode, command, server: server.label, settings: server.settings, data }, null, 2),
);
process.stdout.write(markdown);
log(`report written to bench/out/${mode}-${stamp}.md`);
