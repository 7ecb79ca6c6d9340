/**
 * Part 2, write throughput: pmsync's page upsert against COPY (the ceiling)
 * and a per-row Prisma upsert (what a hand-written script does first), on the
 * same PostgreSQL in the same run, for inserts, updates and unchanged rows;
 * and what history mode (customers_history versions) adds to a page write.
 *
 * Records are the simulator's customers, exactly as served, mapped by the
 * customers stream; preparing them is not timed. Each pmsync page commits in
 * its own transaction, as in a sync. COPY ships the same columns (content hash
 * included) into a table made LIKE customers (same columns, key and
 * defaults), 10,000 rows per COPY statement.
 */
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../src/generated/prisma/client.ts';
import { withTransaction } from '../src/db/pool.ts';
import { buildPageUpsert, upsertPage } from '../src/db/upsert.ts';
import { upsertRows } from '../src/sync/page.ts';
import { DEMO_CORE, startSimulator } from '../simulator/index.ts';
import type { Simulator } from '../simulator/index.ts';
import customers from '../src/sync/streams/core/customers.ts';
import type { MappedRow } from '../src/db/table.ts';
import { copyFrom, copyValue } from './support/copy.ts';
import { createBenchDatabase, type BenchDatabase, type BenchServer } from './support/db.ts';
import { fmtInt, fmtPct, median, spread, table } from './support/stats.ts';

type Row = MappedRow & { raw: Record<string, unknown> };
type Pass = 'insert' | 'update' | 'unchanged';

export interface WriteOptions {
  sizes: number[];
  /** Repetitions per size (the report shows medians). */
  reps: (size: number) => number;
  /** Page sizes for the curve, measured at curveSize; 100 is production's. */
  batches: number[];
  curveSize: number;
  /** Rows written one by one through Prisma per pass (it is too slow for the full sizes). */
  prismaSample: number;
  /** Rows and repetitions of the history-mode comparison (default: curveSize rows, 3 runs; off and on alternate in each). */
  historySize?: number;
  historyReps?: number;
  log: (line: string) => void;
}

export interface WriteResult {
  markdown: string;
  data: unknown;
}

const CHUNK = 10_000;
const PRODUCTION_PAGE = 100;
const SOURCE = 'bench';
const COLS = Object.keys(customers.table.columns);
const COPY_SQL = `COPY bench_copy (source, id, ${COLS.join(', ')}, raw, content_hash, source_modified_at, fetched_at, run_id) FROM STDIN`;

/** Customers as the simulator serves them, mapped; `changed` gives each an edit and a newer ModifiedOn. */
function loadRows(sim: Simulator, offset: number, count: number, changed: boolean): Row[] {
  const records = sim.tenant(DEMO_CORE.apikey).list('customers', { offset, limit: count });
  return records.map((record) => {
    const raw = changed ? { ...record, FirstName: `${String(record.FirstName)}-x`, ModifiedOn: bump(String(record.ModifiedOn)) } : record;
    return { ...customers.map(customers.raw.parse(raw)), raw } as Row;
  });
}

function bump(modifiedOn: string): string {
  return new Date(Date.parse(`${modifiedOn}Z`) + 1000).toISOString().slice(0, 19);
}

/** Rows of the whole size, in chunks prepared outside the timed sections. */
async function eachChunk(sim: Simulator, size: number, changed: boolean, fn: (rows: Row[]) => Promise<void>): Promise<number> {
  let ms = 0;
  for (let offset = 0; offset < size; offset += CHUNK) {
    const rows = loadRows(sim, offset, Math.min(CHUNK, size - offset), changed);
    const t0 = performance.now();
    await fn(rows);
    ms += performance.now() - t0;
  }
  return ms;
}

async function pmsyncPass(db: BenchDatabase, sim: Simulator, size: number, pass: Pass, batch: number): Promise<number> {
  let counted = 0;
  const ms = await eachChunk(sim, size, pass === 'update', async (rows) => {
    for (let i = 0; i < rows.length; i += batch) {
      const page = rows.slice(i, i + batch);
      const out = await withTransaction(db.pool, (tx) =>
        upsertPage(tx, customers.table, page, { source: SOURCE, runId: 1, fetchedAt: new Date() }),
      );
      counted += pass === 'insert' ? out.inserted : pass === 'update' ? out.updated : out.unchanged;
    }
  });
  if (counted !== size) throw new Error(`pmsync ${pass} pass of ${size} rows reported ${counted} ${pass}`);
  return (size / ms) * 1000;
}

/**
 * A page write as a sync does it (upsertRows: the page upsert, then the
 * versions of the rows it wrote), with history mode off or on.
 */
async function historyPass(db: BenchDatabase, sim: Simulator, size: number, pass: Pass, history: boolean): Promise<number> {
  let counted = 0;
  const ms = await eachChunk(sim, size, pass === 'update', async (rows) => {
    for (let i = 0; i < rows.length; i += PRODUCTION_PAGE) {
      const page = rows.slice(i, i + PRODUCTION_PAGE);
      const out = await withTransaction(db.pool, (tx) =>
        upsertRows(tx, customers.table, page, { source: SOURCE, runId: 1, fetchedAt: new Date() }, history),
      );
      counted += pass === 'insert' ? out.inserted : pass === 'update' ? out.updated : out.unchanged;
    }
  });
  if (counted !== size) throw new Error(`history ${history ? 'on' : 'off'} ${pass} pass of ${size} rows reported ${counted} ${pass}`);
  return (size / ms) * 1000;
}

type HistoryRates = Record<'off' | 'on', Record<Pass, number[]>>;

/** History off and on, alternating which goes first, each from empty tables: insert, unchanged, update. */
async function historyComparison(
  db: BenchDatabase,
  sim: Simulator,
  size: number,
  reps: number,
  log: (line: string) => void,
): Promise<{ rates: HistoryRates; versions: number }> {
  const rates: HistoryRates = { off: { insert: [], update: [], unchanged: [] }, on: { insert: [], update: [], unchanged: [] } };
  let versions = 0;
  for (let rep = 0; rep < reps; rep++) {
    for (const mode of rep % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      await truncate(db);
      for (const pass of ['insert', 'unchanged', 'update'] as const)
        rates[mode][pass].push(await historyPass(db, sim, size, pass, mode === 'on'));
      if (mode === 'on') versions = (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM customers_history')).rows[0]!.n;
      log(
        `write history ${mode} ${fmtInt(size)} rep ${rep + 1}: insert ${fmtInt(rates[mode].insert.at(-1)!)}/s, unchanged ${fmtInt(rates[mode].unchanged.at(-1)!)}/s, update ${fmtInt(rates[mode].update.at(-1)!)}/s`,
      );
    }
  }
  if (versions !== 2 * size) throw new Error(`history on wrote ${versions} versions for ${size} inserts and ${size} updates`);
  return { rates, versions };
}

function copyChunk(rows: Row[], fetchedAt: string): Buffer {
  const lines: string[] = [];
  for (const r of rows) {
    const raw = JSON.stringify(r.raw);
    const fields = [
      SOURCE,
      r.id,
      ...COLS.map((c) => r.columns[c]),
      raw,
      createHash('md5').update(raw).digest('hex'),
      r.sourceModifiedAt,
      fetchedAt,
      1,
    ];
    lines.push(fields.map(copyValue).join('\t'));
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

async function copyPass(db: BenchDatabase, sim: Simulator, size: number): Promise<number> {
  const client = await db.pool.connect();
  let copied = 0;
  try {
    const ms = await eachChunk(sim, size, false, async (rows) => {
      copied += await copyFrom(client, COPY_SQL, [copyChunk(rows, new Date().toISOString())]);
    });
    if (copied !== size) throw new Error(`COPY wrote ${copied} of ${size} rows`);
    return (size / ms) * 1000;
  } finally {
    client.release();
  }
}

/** The loop a first script contains: one prisma.customer.upsert per record, each its own statement and commit. */
async function prismaPass(prisma: PrismaClient, sim: Simulator, size: number, pass: Pass): Promise<number> {
  const rows = loadRows(sim, 0, size, pass === 'update');
  const t0 = performance.now();
  for (const r of rows) {
    const c = r.columns;
    const data = {
      companyId: c.company_id as string | null,
      firstName: c.first_name as string | null,
      lastName: c.last_name as string | null,
      email: c.email as string | null,
      mobilePhone: c.mobile_phone as string | null,
      isActive: c.is_active as boolean | null,
      birthday: c.birthday ? new Date(`${String(c.birthday)}T00:00:00Z`) : null,
      lastVisit: c.last_visit ? new Date(`${String(c.last_visit)}T00:00:00Z`) : null,
      raw: r.raw as object,
      contentHash: createHash('md5').update(JSON.stringify(r.raw)).digest('hex'),
      sourceModifiedAt: r.sourceModifiedAt ? new Date(`${r.sourceModifiedAt}Z`) : null,
      fetchedAt: new Date(),
    };
    await prisma.customer.upsert({
      where: { source_id: { source: SOURCE, id: r.id } },
      create: { source: SOURCE, id: r.id, ...data },
      update: data,
    });
  }
  return (size / (performance.now() - t0)) * 1000;
}

/**
 * Where the time of a 100-row insert page goes: each step adds one cost to the
 * one before, so the drop between two rows is that cost. Timed on pages of
 * fresh rows (an empty table), like the insert pass.
 */
const BREAKDOWN: Array<{ step: string; run: (db: BenchDatabase, pages: Row[][]) => Promise<void> }> = [
  {
    step: 'build the statement in Node (JSON encoding)',
    run: async (_db, pages) => {
      for (const p of pages) buildPageUpsert(customers.table, p, { source: SOURCE, runId: 1, fetchedAt: new Date() });
    },
  },
  {
    step: '+ decode the page on the server (jsonb_to_recordset, md5), nothing written',
    run: async (db, pages) => {
      for (const p of pages) {
        const q = buildPageUpsert(customers.table, p, { source: SOURCE, runId: 1, fetchedAt: new Date() });
        await db.pool.query('SELECT count(md5(r.raw::text)) FROM jsonb_to_recordset($1::jsonb) AS r(id text, raw jsonb)', [q.values[0]]);
      }
    },
  },
  {
    step: '+ plain INSERT of the decoded rows (no ON CONFLICT), one commit per page',
    run: async (db, pages) => {
      for (const p of pages) {
        const q = buildPageUpsert(customers.table, p, { source: SOURCE, runId: 1, fetchedAt: new Date() });
        await db.pool.query(q.text.replace(/\n\s*ON CONFLICT[\s\S]*?RETURNING/, '\n  RETURNING'), q.values);
      }
    },
  },
  {
    step: '+ ON CONFLICT DO UPDATE ... WHERE (the upsert statement alone, one commit per page)',
    run: async (db, pages) => {
      for (const p of pages) await db.pool.query(buildPageUpsert(customers.table, p, { source: SOURCE, runId: 1, fetchedAt: new Date() }));
    },
  },
  {
    step: '+ BEGIN, SAVEPOINT, RELEASE, COMMIT around it (upsertPage as a sync runs it)',
    run: async (db, pages) => {
      for (const p of pages)
        await withTransaction(db.pool, (tx) => upsertPage(tx, customers.table, p, { source: SOURCE, runId: 1, fetchedAt: new Date() }));
    },
  },
  {
    step: 'for reference: COPY of 100-row batches, one commit per batch',
    run: async (db, pages) => {
      const client = await db.pool.connect();
      try {
        for (const p of pages) await copyFrom(client, COPY_SQL, [copyChunk(p, new Date().toISOString())]);
      } finally {
        client.release();
      }
    },
  },
];

async function breakdown(db: BenchDatabase, sim: Simulator, size: number, reps: number): Promise<Array<{ step: string; rates: number[] }>> {
  const rows = loadRows(sim, 0, size, false);
  const pages: Row[][] = [];
  for (let i = 0; i < rows.length; i += PRODUCTION_PAGE) pages.push(rows.slice(i, i + PRODUCTION_PAGE));
  const out = BREAKDOWN.map((b) => ({ step: b.step, rates: [] as number[] }));
  for (let rep = 0; rep < reps; rep++) {
    for (const [i, b] of BREAKDOWN.entries()) {
      await truncate(db);
      const t0 = performance.now();
      await b.run(db, pages);
      out[i]!.rates.push((size / (performance.now() - t0)) * 1000);
    }
  }
  return out;
}

async function truncate(db: BenchDatabase): Promise<void> {
  await db.pool.query('TRUNCATE customers, customers_history, bench_copy');
  await db.pool.query('CHECKPOINT').catch(() => undefined);
}

export async function runWrite(server: BenchServer, options: WriteOptions): Promise<WriteResult> {
  const maxSize = Math.max(...options.sizes, options.curveSize, options.prismaSample);
  const sim = await startSimulator({ tenants: [{ ...DEMO_CORE, sizes: { customers: maxSize } }], practices: [] });
  const db = await createBenchDatabase(server);
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url }) });
  try {
    await db.pool.query('CREATE TABLE bench_copy (LIKE customers INCLUDING ALL)');
    const bySize: Array<{ size: number; copy: number[]; insert: number[]; update: number[]; unchanged: number[] }> = [];
    for (const size of options.sizes) {
      const entry = { size, copy: [] as number[], insert: [] as number[], update: [] as number[], unchanged: [] as number[] };
      for (let rep = 0; rep < options.reps(size); rep++) {
        await truncate(db);
        entry.copy.push(await copyPass(db, sim, size));
        entry.insert.push(await pmsyncPass(db, sim, size, 'insert', PRODUCTION_PAGE));
        entry.unchanged.push(await pmsyncPass(db, sim, size, 'unchanged', PRODUCTION_PAGE));
        entry.update.push(await pmsyncPass(db, sim, size, 'update', PRODUCTION_PAGE));
        options.log(
          `write ${fmtInt(size)} rep ${rep + 1}: COPY ${fmtInt(entry.copy.at(-1)!)}/s, insert ${fmtInt(entry.insert.at(-1)!)}/s, unchanged ${fmtInt(entry.unchanged.at(-1)!)}/s, update ${fmtInt(entry.update.at(-1)!)}/s`,
        );
      }
      bySize.push(entry);
    }

    const curve: Array<{ batch: number; insert: number; update: number; unchanged: number }> = [];
    for (const batch of options.batches) {
      await truncate(db);
      const insert = await pmsyncPass(db, sim, options.curveSize, 'insert', batch);
      const unchanged = await pmsyncPass(db, sim, options.curveSize, 'unchanged', batch);
      const update = await pmsyncPass(db, sim, options.curveSize, 'update', batch);
      curve.push({ batch, insert, update, unchanged });
      options.log(
        `write curve ${batch}-row pages: insert ${fmtInt(insert)}/s, unchanged ${fmtInt(unchanged)}/s, update ${fmtInt(update)}/s`,
      );
    }

    const steps = await breakdown(db, sim, options.curveSize, 3);
    options.log(`write breakdown: ${steps.map((b) => fmtInt(median(b.rates))).join(' / ')} rows/s`);

    const historySize = options.historySize ?? options.curveSize;
    const historyReps = options.historyReps ?? 3;
    const history = await historyComparison(db, sim, historySize, historyReps, options.log);

    await truncate(db);
    const perRow = {
      insert: await prismaPass(prisma, sim, options.prismaSample, 'insert'),
      unchanged: await prismaPass(prisma, sim, options.prismaSample, 'unchanged'),
      update: await prismaPass(prisma, sim, options.prismaSample, 'update'),
    };
    options.log(
      `write Prisma per-row (${options.prismaSample} rows): insert ${fmtInt(perRow.insert)}/s, unchanged ${fmtInt(perRow.unchanged)}/s, update ${fmtInt(perRow.update)}/s`,
    );

    return {
      markdown: report(options, bySize, curve, perRow, steps, { size: historySize, reps: historyReps, rates: history.rates }),
      data: {
        bySize,
        curve,
        perRow,
        steps,
        prismaSample: options.prismaSample,
        history: { size: historySize, reps: historyReps, ...history },
      },
    };
  } finally {
    await prisma.$disconnect();
    await db.drop();
    await sim.close();
  }
}

function report(
  options: WriteOptions,
  bySize: Array<{ size: number; copy: number[]; insert: number[]; update: number[]; unchanged: number[] }>,
  curve: Array<{ batch: number; insert: number; update: number; unchanged: number }>,
  perRow: Record<Pass, number>,
  steps: Array<{ step: string; rates: number[] }>,
  history: { size: number; reps: number; rates: HistoryRates },
): string {
  const rows: string[][] = [];
  for (const e of bySize) {
    const copy = median(e.copy);
    rows.push([fmtInt(e.size), 'COPY (ceiling)', fmtInt(copy), '100%', '', String(e.copy.length), spread(e.copy)]);
    for (const pass of ['insert', 'update', 'unchanged'] as const) {
      const v = median(e[pass]);
      rows.push([
        fmtInt(e.size),
        `pmsync ${pass}`,
        fmtInt(v),
        fmtPct(v / copy),
        `${fmtInt(v / perRow[pass])}x`,
        String(e[pass].length),
        spread(e[pass]),
      ]);
    }
  }
  const main = table(['rows', 'writer', 'rows/s (median)', 'of COPY', 'vs Prisma per-row', 'runs', 'each run'], rows);
  const curveTable = table(
    ['rows per page', 'insert rows/s', 'update rows/s', 'unchanged rows/s'],
    curve.map((c) => [
      c.batch === PRODUCTION_PAGE ? `${c.batch} (production)` : String(c.batch),
      fmtInt(c.insert),
      fmtInt(c.update),
      fmtInt(c.unchanged),
    ]),
  );
  const prismaTable = table(
    ['pass', 'rows/s'],
    (['insert', 'update', 'unchanged'] as const).map((p) => [`Prisma upsert per row, ${p}`, fmtInt(perRow[p])]),
  );
  return [
    `pmsync: \`upsertPage\` on ${PRODUCTION_PAGE}-row pages, one transaction per page (as a sync commits). COPY: ${fmtInt(CHUNK)} rows per \`COPY ... FROM STDIN\` into a table LIKE customers. Both include encoding the rows on the client; loading the records from the simulator and mapping them is not timed.`,
    '',
    main,
    '',
    `Per-row Prisma upsert (\`prisma.customer.upsert\`, one statement and commit per row), ${fmtInt(options.prismaSample)} rows per pass on an empty table; the "vs Prisma" column divides by these:`,
    '',
    prismaTable,
    '',
    `Page size curve at ${fmtInt(options.curveSize)} rows (one run each):`,
    '',
    curveTable,
    '',
    `What bounds a 100-row insert page (${fmtInt(options.curveSize)} rows, median of 3 runs each; every step includes the ones above it):`,
    '',
    table(
      ['step', 'rows/s', 'each run'],
      steps.map((b) => [b.step, fmtInt(median(b.rates)), spread(b.rates)]),
    ),
    '',
    `History mode: the page write a sync does (\`upsertRows\`: the upsert, then in the same transaction the versions of the rows it wrote), ${PRODUCTION_PAGE}-row pages, ${fmtInt(history.size)} rows, off and on alternating first in each of ${history.reps} runs, each from empty tables; the update pass closes one version and opens another per row:`,
    '',
    table(
      ['pass', 'history off rows/s', 'history on rows/s', 'on / off', 'off, each run', 'on, each run'],
      (['insert', 'update', 'unchanged'] as const).map((p) => {
        const off = median(history.rates.off[p]);
        const on = median(history.rates.on[p]);
        return [p, fmtInt(off), fmtInt(on), fmtPct(on / off), spread(history.rates.off[p]), spread(history.rates.on[p])];
      }),
    ),
  ].join('\n');
}
