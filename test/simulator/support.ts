import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import type { CoreTenantOptions } from '../../simulator/index.ts';
import { scaled } from '../support/time-scale.ts';

export const CORE: CoreTenantOptions = { apikey: 'core-key', username: 'alice', password: 's3cret', variant: 'core' };
export const SUBSET: CoreTenantOptions = {
  apikey: 'subset-key',
  username: 'bob',
  password: 'hunter2',
  variant: 'subset',
  subsetName: 'Acme',
};

export function basic(username: string, password: string): string {
  return Buffer.from(`${username}:${password}`).toString('base64');
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json<T = unknown>(): T;
}

export async function call(
  url: string,
  init: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  const headers = { ...init.headers };
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await request(url, { method: init.method ?? 'GET', headers, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: <T>() => JSON.parse(text) as T };
}

/** A URL on a Core-style base with the tenant's apikey and any extra query. */
export function coreUrl(base: string, path: string, tenant: CoreTenantOptions, query: Record<string, string | number> = {}): string {
  const url = new URL(`${base}/${path}`);
  url.searchParams.set('apikey', tenant.apikey);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, String(value));
  return url.toString();
}

export function authHeader(tenant: CoreTenantOptions): Record<string, string> {
  return { authorization: `Basic ${basic(tenant.username, tenant.password)}` };
}

/** GET a Core or Subset path with Basic credentials. */
export function coreGet(
  base: string,
  path: string,
  tenant: CoreTenantOptions,
  query: Record<string, string | number> = {},
): Promise<Reply> {
  return call(coreUrl(base, path, tenant, query), { headers: authHeader(tenant) });
}

/** A controllable clock for quota days and ModifiedOn stamps. */
export class TestClock {
  ms: number;
  constructor(iso: string) {
    this.ms = Date.parse(iso);
  }
  readonly now = (): Date => new Date(this.ms);
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface Receiver {
  url: string;
  bodies: unknown[];
  close(): Promise<void>;
}

/** A webhook receiver whose answer to the n-th request (1-based) is chosen by `respond`. */
export async function startReceiver(
  respond: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _req, res) => res.writeHead(200).end(),
): Promise<Receiver> {
  const bodies: unknown[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      respond(bodies.length, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    bodies,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls until `check` holds; `timeoutMs` is a hang guard for an unloaded machine, scaled. */
export async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The simulator's waits (slowMs, hangMs), held until the test releases them: no wall-clock time is spent. */
export class HeldDelays {
  readonly pending: Array<{ ms: number; release: () => void }> = [];
  delay = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      const entry = { ms, release: () => resolve() };
      this.pending.push(entry);
      signal.addEventListener('abort', entry.release, { once: true });
    });
  /** Lets every held wait end, and forgets it. */
  releaseAll(): void {
    for (const entry of this.pending.splice(0)) entry.release();
  }
}
