/**
 * Helpers for the webhook tests: real HTTP servers standing in for a foreign
 * host or for a misbehaving API in front of the simulator, an app opened on a
 * test database, and polling.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { openApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type Config } from '../../src/config/schema.ts';
import type { RetryPolicy } from '../../src/config/schema.ts';
import { writeConfig } from '../support/cli.ts';
import { waitUntil } from '../support/time-scale.ts';

export interface Recorded {
  method: string;
  url: string;
}

export interface TestServer {
  url: string;
  port: number;
  requests: Recorded[];
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
}

/** A server that records every request and answers 200 {}: stands in for a foreign host. */
export async function startListener(): Promise<TestServer> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '' });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const port = await listen(server);
  return { url: `http://127.0.0.1:${port}`, port, requests, close: closer(server) };
}

export type Intercept = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface Gate extends TestServer {
  /** Answers a request itself when it returns true; otherwise the request is forwarded. */
  intercept: Intercept | null;
  /** While set, forwarded responses are held until release(). */
  holding: boolean;
  release(): void;
  /** Resolves when the next request for a path containing `part` arrives. */
  arrival(part: string): Promise<void>;
}

/** A reverse proxy in front of `target` that can hold responses or answer requests itself. */
export async function startGate(target: string): Promise<Gate> {
  const requests: Recorded[] = [];
  const held: Array<() => void> = [];
  const waiters: Array<{ part: string; resolve: () => void }> = [];
  const to = new URL(target);
  const gate = {} as Gate;
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '' });
    for (const w of [...waiters]) {
      if ((req.url ?? '').includes(w.part)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    if (gate.intercept?.(req, res)) return;
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
      (up) => {
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', () => {
          const send = () => res.writeHead(up.statusCode ?? 502, up.headers).end(Buffer.concat(chunks));
          if (gate.holding) held.push(send);
          else send();
        });
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  const port = await listen(server);
  Object.assign(gate, {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: closer(server),
    intercept: null,
    holding: false,
    release() {
      gate.holding = false;
      for (const send of held.splice(0)) send();
    },
    arrival(part: string) {
      return new Promise<void>((resolve) => waiters.push({ part, resolve }));
    },
  });
  return gate;
}

/** Collects log lines so a test can prove a secret never reached them. */
export function logSink(): { stream: Writable; text(): string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { stream, text: () => lines.join('') };
}

export const FAST_RETRY: RetryPolicy = { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50, maxElapsedMs: 2_000 };

/** A source entry of the config file. */
export function coreSourceEntry(
  name: string,
  baseUrl: string,
  t: { apikey: string; username: string; password: string },
  extra: Record<string, unknown> = {},
) {
  return {
    name,
    kind: 'core',
    baseUrl,
    apikey: t.apikey,
    username: t.username,
    password: t.password,
    lagSeconds: 0,
    requestTimeoutMs: 5_000,
    ...extra,
  };
}

/**
 * The configuration loadConfig makes of a config file with these sources and
 * webhook settings. Deliveries fetch their record (refresh "record"): these
 * tests are about that path; notifications that trigger checks are tested
 * with the scheduler (test/scheduler/day.int.test.ts).
 */
export function testConfig(databaseUrl: string, sources: unknown[], webhooks: Record<string, unknown> = {}): Config {
  const file = writeConfig({ databaseUrl, sources, webhooks: { retryDelaySeconds: 1, refresh: 'record', ...webhooks } });
  return { ...loadConfig(STREAM_REGISTRY, { configFile: file, env: {} }), logLevel: 'debug' };
}

export async function openTestApp(config: Config, options: { logs?: Writable; now?: () => Date } = {}): Promise<App> {
  return openApp(config, {
    retry: FAST_RETRY,
    logDestination: options.logs ?? logSink().stream,
    now: options.now,
  });
}

/** Polls `probe` until it returns a truthy value; `timeoutMs` is a hang guard for an unloaded machine, scaled. */
export function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  return waitUntil(probe, what, { timeoutMs });
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  method = 'POST',
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    headers,
    body: method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed };
}
