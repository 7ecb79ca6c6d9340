/**
 * Part 6, the write cost of column policies: the simulator's customers,
 * exactly as served, written the way a sync writes a page (`writePage`:
 * the stored-policy check, the policies applied to each record, validation,
 * mapping, the upsert and the quarantine bookkeeping, one transaction per
 * 100-row page), with no policies and with policies on (names and emails
 * hashed, the phone dropped, the birthday cut to its year, raw keeping the
 * declared fields only), in the same run on the same PostgreSQL, off and on
 * alternating which goes first, each from empty tables, after a warm-up run
 * that is not counted. Loading the records from the simulator is not timed.
 */
import { DEMO_CORE, startSimulator, type Simulator } from '../simulator/index.ts';
import type { SourceConfig } from '../src/config/schema.ts';
import { withTransaction } from '../src/db/pool.ts';
import { ensurePolicy } from '../src/state/privacy-policies.ts';
import { idReader, writePage } from '../src/sync/page.ts';
import customers from '../src/sync/streams/core/customers.ts';
import { settingsFor, type TableSettings } from '../src/sync/table-settings.ts';
import { mergePrivacy, parseRule, type Rule } from '../src/config/privacy.ts';
import { createBenchDatabase, type BenchServer, type BenchDatabase } from './support/db.ts';
import { fmtInt, fmtPct, median, spread, table } from './support/stats.ts';

export interface PrivacyOptions {
  size: number;
  reps: number;
  log: (line: string) => void;
}

type Pass = 'insert' | 'unchanged' | 'update';
type Mode = 'off' | 'on';

const PAGE = 100;
const SOURCE = 'bench';
const KEY = 'bench-hash-key-0123456789abcdef0123456789abcdef';
const rule = (text: string): Rule => parseRule(text)!;

/** The source as a sync sees it, with or without policies (what the config file would resolve to). */
function sourceFor(mode: Mode): SourceConfig {
  const base = {
    name: SOURCE,
    kind: 'core',
    baseUrl: 'http://127.0.0.1/api/v1',
    columns: {},
    history: [],
  } as unknown as SourceConfig;
  if (mode === 'off') return base;
  return {
    ...base,
    privacy: mergePrivacy(
      undefined,
      {
        personal: rule('hash'),
        columns: { 'customers.mobile_phone': rule('drop'), 'customers.birthday': rule('year') },
        raw: 'declared',
      },
      KEY,
    ),
  };
}

function records(sim: Simulator, size: number, changed: boolean): Array<Record<string, unknown>> {
  return sim
    .tenant(DEMO_CORE.apikey)
    .list('customers', { offset: 0, limit: size })
    .map((r) => (changed ? { ...r, FirstName: `${String(r.FirstName)}-x`, ModifiedOn: bump(String(r.ModifiedOn)) } : r));
}

function bump(modifiedOn: string): string {
  return new Date(Date.parse(`${modifiedOn}Z`) + 1000).toISOString().slice(0, 19);
}

async function pass(db: BenchDatabase, sim: Simulator, size: number, p: Pass, settings: TableSettings): Promise<number> {
  const all = records(sim, size, p === 'update');
  const idOf = idReader('CustomerId');
  let counted = 0;
  const t0 = performance.now();
  for (let i = 0; i < all.length; i += PAGE) {
    const out = await withTransaction(db.pool, (tx) =>
      writePage(tx, customers, all.slice(i, i + PAGE), { source: SOURCE, runId: 1, sentAt: new Date(), markSeen: false, idOf, settings }),
    );
    if (out.rejected > 0) throw new Error(`${out.rejected} records set aside`);
    counted += p === 'insert' ? out.inserted : p === 'update' ? out.updated : out.unchanged;
  }
  const ms = performance.now() - t0;
  if (counted !== size) throw new Error(`${p} pass of ${size} rows reported ${counted} ${p}`);
  return (size / ms) * 1000;
}

export async function runPrivacy(server: BenchServer, options: PrivacyOptions): Promise<{ markdown: string; data: unknown }> {
  const sim = await startSimulator({ tenants: [{ ...DEMO_CORE, sizes: { customers: options.size } }], practices: [] });
  const db = await createBenchDatabase(server);
  const rates: Record<Mode, Record<Pass, number[]>> = {
    off: { insert: [], unchanged: [], update: [] },
    on: { insert: [], unchanged: [], update: [] },
  };
  try {
    // Rep 0 warms the code paths, the server's caches and the JIT up and is not counted.
    for (let rep = 0; rep <= options.reps; rep++) {
      for (const mode of rep % 2 === 1 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        await db.pool.query('TRUNCATE customers, pmsync.privacy_policies, pmsync.quarantine');
        await db.pool.query('CHECKPOINT').catch(() => undefined);
        const source = sourceFor(mode);
        const settings = settingsFor(source, customers);
        if (settings.privacy) await ensurePolicy(db.pool, SOURCE, customers, settings.privacy, 'start');
        for (const p of ['insert', 'unchanged', 'update'] as const) {
          const rate = await pass(db, sim, options.size, p, settings);
          if (rep > 0) rates[mode][p].push(rate);
        }
        if (rep === 0) continue;
        options.log(
          `privacy ${mode} ${fmtInt(options.size)} run ${rep}: insert ${fmtInt(rates[mode].insert.at(-1)!)}/s, unchanged ${fmtInt(rates[mode].unchanged.at(-1)!)}/s, update ${fmtInt(rates[mode].update.at(-1)!)}/s`,
        );
      }
    }
    const hashed = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM customers WHERE email ~ '^[0-9a-f]{64}$'`);
    if (hashed.rows[0]!.n !== options.size) throw new Error(`policies on left ${options.size - hashed.rows[0]!.n} emails unhashed`);
  } finally {
    await db.drop();
    await sim.close();
  }
  const markdown = [
    `Column policies: the page write a sync does (\`writePage\`: the stored-policy check, the policies on each record, validation, mapping, the upsert), ${PAGE}-row pages, ${fmtInt(options.size)} customers, with no policies and with names and emails hashed, the phone dropped, the birthday cut to its year and raw keeping declared fields; off and on alternating first in each of ${options.reps} runs after one warm-up run that is not counted, each from empty tables:`,
    '',
    table(
      ['pass', 'policies off rows/s', 'policies on rows/s', 'on / off', 'off, each run', 'on, each run'],
      (['insert', 'update', 'unchanged'] as const).map((p) => {
        const off = median(rates.off[p]);
        const on = median(rates.on[p]);
        return [p, fmtInt(off), fmtInt(on), fmtPct(on / off), spread(rates.off[p]), spread(rates.on[p])];
      }),
    ),
  ].join('\n');
  return { markdown, data: { size: options.size, reps: options.reps, rates } };
}
