/**
 * A fresh database per test file, migrated, on the run's PostgreSQL server.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { migrate } from '../../src/db/migrate.ts';

export interface TestDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

export function adminUrl(): string {
  return inject('pgAdminUrl');
}

export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = new URL(adminUrl());
  const name = `pmsync_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin.toString());
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), 10);
  if (options.migrate !== false) await migrate(pool);
  return {
    url: url.toString(),
    pool,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: admin.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
