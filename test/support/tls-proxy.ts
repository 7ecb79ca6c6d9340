/**
 * A PostgreSQL server that speaks TLS with a self-signed certificate, for
 * tests of what each `sslmode` means: a proxy that answers the client's
 * SSLRequest, ends TLS and passes the connection on, in plain, to the test's
 * PostgreSQL. A client that does not ask for TLS is refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext, TLSSocket } from 'node:tls';

/** The code of PostgreSQL's SSLRequest message (protocol 1234.5679). */
const SSL_REQUEST = 80877103;

export interface TlsPostgres {
  /** The target URL with its host and port replaced by the proxy's. */
  url(target: string): string;
  /** Connections that completed a TLS handshake. */
  handshakes: number;
  close(): Promise<void>;
}

function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-tls-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'],
    {
      stdio: 'ignore',
    },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

export async function startTlsPostgres(host: string, port: number): Promise<TlsPostgres> {
  const context = createSecureContext(selfSignedCertificate());
  const sockets = new Set<Socket>();
  const state = { handshakes: 0 };
  const server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    client.once('data', (first) => {
      if (first.length !== 8 || first.readInt32BE(4) !== SSL_REQUEST) {
        client.destroy();
        return;
      }
      client.write('S');
      const secure = new TLSSocket(client, { isServer: true, secureContext: context });
      secure.on('error', () => client.destroy());
      secure.once('secure', () => {
        state.handshakes += 1;
        const upstream = connect(port, host);
        sockets.add(upstream);
        upstream.on('close', () => sockets.delete(upstream));
        upstream.on('error', () => secure.destroy());
        secure.pipe(upstream).pipe(secure);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const own = (server.address() as AddressInfo).port;
  return {
    url(target) {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(own);
      return u.toString();
    },
    get handshakes() {
      return state.handshakes;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
