/**
 * A TCP proxy in front of a server, which a test can cut: open connections
 * are dropped and new ones refused, as when a database goes away mid-run.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  /** The target URL with its host and port replaced by the proxy's. */
  url(target: string): string;
  /** Drops every connection and stops listening (later connections are refused). */
  cut(): Promise<void>;
}

export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const own = (server.address() as AddressInfo).port;
  return {
    port: own,
    url(target) {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(own);
      return u.toString();
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
