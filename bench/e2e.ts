/**
 * Part 3, end to end: `pmsync sync --resource customers` as an operator runs
 * it, against the simulator (`npm run simulator -- --customers N --quota 0`)
 * in another process, with the source's daily quota set out of the way. Measured: rows per second
 * of the run (pmsync.runs start to end) and of the whole process (start-up and
 * migration check included), and the pmsync process's peak resident memory
 * (VmHWM from /proc), with RSS sampled over the run to show it stays flat.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_CORE } from '../simulator/index.ts';
import { createBenchDatabase, type BenchServer } from './support/db.ts';
import { cliEnv, runCliMeasured, startSimulatorProcess, STARTS, type MemorySample, type StartName } from './support/proc.ts';
import { fmtInt, fmtMb, fmtNum, median, spread, table } from './support/stats.ts';

export interface EndToEndOptions {
  sizes: number[];
  reps: (rows: number) => number;
  /** How the pmsync process is started and its NODE_OPTIONS ('' is Node's defaults), compared side by side. */
  variants: Variant[];
  log: (line: string) => void;
}

/** The budget the memory target sets for the pmsync process. */
export const RSS_TARGET_BYTES = 256 * 1024 * 1024;

export interface Variant {
  start: StartName;
  nodeOptions: string;
}

interface Trial {
  variant: Variant;
  /** With --trace-gc: the largest heap left after a full (mark-compact) collection, and how many there were. */
  liveAfterFullGcMb?: number;
  fullGcs?: number;
  rows: number;
  runSeconds: number;
  wallSeconds: number;
  runRowsPerSecond: number;
  wallRowsPerSecond: number;
  peakRssBytes: number;
  /** Largest RSS seen in each quarter of the process's life. */
  quarterRss: number[];
}

function quarters(samples: MemorySample[], wallMs: number): number[] {
  const out = [0, 0, 0, 0];
  for (const s of samples) {
    const q = Math.min(3, Math.floor((s.atMs / wallMs) * 4));
    out[q] = Math.max(out[q]!, s.rssBytes);
  }
  return out;
}

async function trial(server: BenchServer, simUrl: string, rows: number, variant: Variant, traceGc = false): Promise<Trial> {
  const { nodeOptions } = variant;
  const db = await createBenchDatabase(server);
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-bench-e2e-'));
  try {
    const configFile = join(dir, 'pmsync.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: [
          {
            kind: 'core',
            name: 'bench',
            baseUrl: `${simUrl}/api/v1`,
            apikey: DEMO_CORE.apikey,
            username: DEMO_CORE.username,
            password: DEMO_CORE.password,
            dailyQuota: 1_000_000_000,
          },
        ],
      }),
    );
    const env = cliEnv({ DATABASE_URL: db.url, PMSYNC_DATA_DIR: dir, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) });
    const result = await runCliMeasured(['--config', configFile, 'sync', '--resource', 'customers'], env, {
      nodeArgs: traceGc ? ['--trace-gc'] : [],
      start: variant.start,
    });
    if (result.code !== 0) throw new Error(`pmsync sync exited with ${result.code ?? result.signal}: ${result.stderr.slice(-2000)}`);
    const run = await db.pool.query<{ seconds: number; inserted: number; stored: number }>(
      `SELECT extract(epoch FROM ended_at - started_at)::float8 AS seconds, inserted, (SELECT count(*) FROM customers)::int AS stored
       FROM pmsync.runs WHERE resource = 'customers' AND status = 'succeeded' ORDER BY id DESC LIMIT 1`,
    );
    const r = run.rows[0];
    if (!r || r.stored !== rows) throw new Error(`expected ${rows} customers stored, found ${r?.stored ?? 0}`);
    // V8 prints "[pid:0xisolate] 1234 ms: Mark-Compact 113.4 (232.7) -> 29.5 (182.2) MB": used (committed) before -> after.
    // One isolate per thread: the command's is the one that collects most.
    const byIsolate = new Map<string, number[]>();
    for (const m of result.stdout.matchAll(/\[\d+:(\w+)\]\s+[\d.]+ ms: Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(/g)) {
      byIsolate.set(m[1]!, [...(byIsolate.get(m[1]!) ?? []), Number(m[2])]);
    }
    const afterFullGc = [...byIsolate.values()].reduce((a, b) => (b.length > a.length ? b : a), []);
    return {
      variant,
      ...(traceGc ? { liveAfterFullGcMb: Math.max(0, ...afterFullGc), fullGcs: afterFullGc.length } : {}),
      rows,
      runSeconds: r.seconds,
      wallSeconds: result.wallMs / 1000,
      runRowsPerSecond: rows / r.seconds,
      wallRowsPerSecond: rows / (result.wallMs / 1000),
      peakRssBytes: result.peakRssBytes,
      quarterRss: quarters(result.samples, result.wallMs),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

export async function runEndToEnd(server: BenchServer, options: EndToEndOptions): Promise<{ markdown: string; data: unknown }> {
  const groups: Array<{ rows: number; variant: Variant; trials: Trial[] }> = [];
  const gcRuns: Trial[] = [];
  for (const rows of options.sizes) {
    options.log(`e2e: starting the simulator with ${fmtInt(rows)} customers`);
    const sim = await startSimulatorProcess(['--customers', String(rows), '--quota', '0']);
    try {
      const mine = options.variants.map((variant) => ({ rows, variant, trials: [] as Trial[] }));
      groups.push(...mine);
      // Settings alternate within each repetition, so a noisy neighbour slows them alike.
      for (let rep = 0; rep < options.reps(rows); rep++) {
        for (const group of mine) {
          const t = await trial(server, sim.url, rows, group.variant);
          group.trials.push(t);
          options.log(
            `e2e ${fmtInt(rows)} ${label(group.variant)} rep ${rep + 1}: ${fmtInt(t.runRowsPerSecond)} rows/s (run), ${fmtInt(t.wallRowsPerSecond)} rows/s (process), peak RSS ${fmtMb(t.peakRssBytes)}, RSS by quarter ${t.quarterRss.map(fmtMb).join(' / ')}`,
          );
        }
      }
      // One more run with --trace-gc (not in the medians): what the heap holds once garbage is gone.
      const traced = await trial(server, sim.url, rows, { start: 'bin', nodeOptions: '' }, true);
      gcRuns.push(traced);
      options.log(
        `e2e ${fmtInt(rows)} --trace-gc: largest heap after a full GC ${fmtNum(traced.liveAfterFullGcMb ?? Number.NaN)} MB over ${traced.fullGcs} full GCs`,
      );
    } finally {
      await sim.stop();
    }
  }
  const rowsOut = groups.map(({ rows, variant, trials }) => {
    const peak = Math.max(...trials.map((t) => t.peakRssBytes));
    const last = trials.at(-1)!;
    return [
      fmtInt(rows),
      label(variant),
      String(trials.length),
      fmtInt(median(trials.map((t) => t.runRowsPerSecond))),
      fmtInt(median(trials.map((t) => t.wallRowsPerSecond))),
      fmtNum(median(trials.map((t) => t.wallSeconds))),
      `${fmtMb(median(trials.map((t) => t.peakRssBytes)))} (max ${fmtMb(peak)})`,
      last.quarterRss.map(fmtMb).join(' / '),
      peak < RSS_TARGET_BYTES ? 'yes' : 'NO',
    ];
  });
  const flat = options.variants
    .map((variant) => {
      const mine = groups.filter((g) => g.variant === variant);
      const small = mine[0];
      const big = mine.at(-1);
      if (!small || !big || small === big) return '';
      const ratio = median(big.trials.map((t) => t.peakRssBytes)) / median(small.trials.map((t) => t.peakRssBytes));
      return `- ${label(variant)}: peak RSS at ${fmtInt(big.rows)} rows is ${fmtNum(ratio, 2)}x the peak at ${fmtInt(small.rows)} rows.`;
    })
    .filter(Boolean);
  const markdown = [
    `\`pmsync sync --resource customers\` in its own process, started as the table's second column says (as shipped: the \`pmsync\` bin's shebang, \`npm run pmsync\` and the image give Node pmsync's heap flags, src/cli/process.ts; DATABASE_URL points at the bench PostgreSQL) against the simulator (\`npm run simulator -- --customers N --quota 0\`) in another, source dailyQuota 1,000,000,000. "run" rows/s is measured from the run's own start and end in pmsync.runs; "process" includes Node start-up and the migration check. Peak RSS is the kernel's VmHWM of the pmsync process; RSS by quarter is the largest RSS sampled (every 50 ms) in each quarter of the process's life.`,
    '',
    table(
      [
        'customers',
        'started as',
        'runs',
        'rows/s (run, median)',
        'rows/s (process, median)',
        'process seconds (median)',
        'peak RSS (median)',
        'RSS by quarter (last run)',
        'under 256 MB',
      ],
      rowsOut,
    ),
    '',
    ...(flat.length > 0 ? ['Growth of the peak with 10x the rows:', '', ...flat, ''] : []),
    `What the heap holds once garbage is collected (one more run per size as shipped, with \`--trace-gc\`, not in the medians above): ${gcRuns.map((t) => `${fmtInt(t.rows)} rows: at most ${fmtNum(t.liveAfterFullGcMb ?? Number.NaN)} MB after each of ${t.fullGcs} full collections`).join('; ')}.`,
    '',
    `Each run (rows/s): ${groups.map(({ rows, variant, trials }) => `${fmtInt(rows)} ${label(variant)}: ${spread(trials.map((t) => t.runRowsPerSecond))}`).join('; ')}.`,
  ].join('\n');
  return { markdown, data: { groups, gcRuns } };
}

function label({ start, nodeOptions }: Variant): string {
  return `${STARTS[start].label}${nodeOptions ? `, NODE_OPTIONS \`${nodeOptions}\`` : ''}`;
}
