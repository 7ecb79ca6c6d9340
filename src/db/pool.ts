import pg from 'pg';
import { PmsyncError } from '../errors.ts';
import { redactUrl } from '../redact.ts';

export type Pool = pg.Pool;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/** Parse int8 and numeric as JS values the way analysts' tools would show them. */
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export function createPool(connectionString: string, max = 5): Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: 'pmsync' });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Fails fast with a message naming the database (without its password) when it cannot be reached. */
export async function checkConnection(pool: Pool, connectionString: string): Promise<void> {
  try {
    await pool.query('select 1');
  } catch (err) {
    throw new PmsyncError('DB_UNREACHABLE', `Cannot reach PostgreSQL at ${redactUrl(connectionString)}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

export async function withTransaction<T>(pool: Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
