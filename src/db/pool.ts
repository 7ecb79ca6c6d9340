import pg from 'pg';
import { PmsyncError } from '../errors.ts';
import { redactUrl } from '../redact.ts';
import { useFastTimestamps } from './timestamps.ts';

export type Pool = pg.Pool;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/** Parse int8 and numeric as JS values the way analysts' tools would show them. */
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
/** timestamptz read without postgres-date's regular expressions where its form allows (src/db/timestamps.ts). */
useFastTimestamps();

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
    // Node names an empty list of IP addresses as "... is not in the cert's list: ".
    const message = (err as Error).message.replace(NODE_CA_ADVICE, '').replace(/[:\s]+$/, '');
    const hint = tlsHint(err, connectionString);
    throw new PmsyncError(
      'DB_UNREACHABLE',
      `Cannot reach PostgreSQL at ${redactUrl(connectionString)}: ${message}${hint ? `. ${hint}` : ''}`,
      {
        cause: err,
      },
    );
  }
}

/** Node's own advice after a certificate it cannot verify, which names a Node flag rather than DATABASE_URL. */
const NODE_CA_ADVICE = /; if the root CA is installed locally, try running Node\.js with --use-system-ca$/;

/** Codes of a server certificate no trusted CA signed (node:tls, from OpenSSL). */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/** What to change in DATABASE_URL after a refused server certificate (docs/privacy.md, "Transport"). */
function tlsHint(err: unknown, connectionString: string): string | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return undefined;
  }
  if (UNTRUSTED_CERTIFICATE.has(code)) {
    return url.searchParams.has('sslrootcert')
      ? "The server's certificate is not signed by the CA in the sslrootcert file: name the CA file that signed it"
      : "The server's certificate is not signed by a CA this machine trusts: add sslrootcert=/path/to/ca.pem (the CA that signed it) to DATABASE_URL";
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `The server's certificate does not name the host ${url.hostname}: connect by a host name the certificate names (sslmode=verify-full checks it)`;
  }
  if (code === 'CERT_HAS_EXPIRED') return "The server's certificate has expired: the database's administrator must renew it";
  return undefined;
}

/** Socket-level failures: the server refused, reset or dropped the connection, or was never found. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Whether an error means the connection to PostgreSQL is gone (or never came),
 * rather than that one statement failed: socket errors, SQLSTATE class 08
 * (connection exception), 57P01-57P03 (the server is shutting down or not yet
 * accepting), and node-postgres' own messages for a connection that ended.
 * pmsync's own errors (an unreachable API among them) are never counted.
 */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof PmsyncError || err === null || typeof err !== 'object') return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code))) return true;
  return /Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection closed/i.test(
    (err as Error).message ?? '',
  );
}

/** The error for a database lost during work, naming it (without its password). */
export function databaseLost(err: unknown, connectionString?: string): PmsyncError {
  const where = connectionString ? ` at ${redactUrl(connectionString)}` : '';
  return new PmsyncError(
    'DB_UNREACHABLE',
    `Lost the connection to PostgreSQL${where}: ${(err as Error).message}. Pages committed before it kept their checkpoints; run again once the database answers.`,
    { cause: err },
  );
}

export async function withTransaction<T>(pool: Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection lost between two statements is reported by the next one; unheard, its 'error' event would end the process.
  const lost = () => undefined;
  client.on('error', lost);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (isConnectionError(err)) broken = err as Error;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', lost);
    // A broken connection is dropped, not handed to the next caller.
    client.release(broken);
  }
}
