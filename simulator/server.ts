import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as wait } from 'node:timers/promises';
import { serveControl } from './control.ts';
import { serveCore } from './core/routes.ts';
import { Tenant } from './core/tenant.ts';
import { FaultInjector } from './faults.ts';
import { sendEmpty, sendText } from './http.ts';
import { Practice } from './pro/practice.ts';
import { servePro } from './pro/routes.ts';
import { QuotaLedger } from './quota.ts';
import type {
  CoreTenantOptions,
  Faults,
  PracticeHandle,
  ProPracticeOptions,
  RequestLogEntry,
  Simulator,
  SimulatorOptions,
  SimulatorStats,
  TenantHandle,
} from './types.ts';
import { DEFAULT_WEBHOOK_TIMING, WebhookDispatcher } from './webhooks.ts';

// The HTTP server: routes each request to the Core, Subset or Pro handlers
// (or the /__sim/ control API), injects faults first, and logs it.

const DAY_MS = 86_400_000;
const DEFAULT_SEED = 1;
const DEFAULT_REQUEST_LOG_LIMIT = 200_000;

type Route =
  | { api: 'core'; segments: string[] }
  | { api: 'subset'; subsetName: string; segments: string[] }
  | { api: 'pro'; practiceId: string; segments: string[] }
  | { api: 'control' }
  | { api: 'unknown' };

function classify(pathname: string): Route {
  if (pathname.startsWith('/__sim/')) return { api: 'control' };
  let segments: string[];
  try {
    segments = pathname
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
  } catch {
    return { api: 'unknown' };
  }
  const lower = segments.map((s) => s.toLowerCase());
  if (lower[0] === 'api' && lower[1] === 'v1') return { api: 'core', segments: segments.slice(2) };
  if (lower[0] === 'customapi' && segments[1] !== undefined && lower[2] === 'api' && lower[3] === 'v1') {
    return { api: 'subset', subsetName: segments[1], segments: segments.slice(4) };
  }
  if (segments[0] === 'practices' && segments[1] !== undefined) {
    return { api: 'pro', practiceId: segments[1], segments: segments.slice(2) };
  }
  return { api: 'unknown' };
}

export class SimulatorServer implements Simulator {
  url = '';
  private readonly server: Server;
  private readonly now: () => Date;
  private readonly tenants = new Map<string, Tenant>();
  private readonly practices = new Map<number, Practice>();
  private readonly tokens = new Set<string>();
  private readonly quota = new QuotaLedger();
  private readonly faults: FaultInjector;
  /** Faults set for one apikey, replacing the global ones for its requests. */
  private readonly keyFaults = new Map<string, FaultInjector>();
  private readonly seed: number;
  private readonly dispatcher: WebhookDispatcher;
  private readonly log: RequestLogEntry[] = [];
  private readonly logLimit: number;
  private dropped = 0;
  private webhookIds = 0;
  private closing = false;
  private readonly delay: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborted by close(): ends every wait for slowMs or hangMs at once. */
  private readonly closed = new AbortController();

  constructor(options: SimulatorOptions, tenants: CoreTenantOptions[], practices: ProPracticeOptions[]) {
    const seed = options.seed ?? DEFAULT_SEED;
    this.now = options.now ?? (() => new Date());
    this.delay = options.delay ?? ((ms, signal) => wait(ms, undefined, { signal }));
    this.logLimit = options.requestLogLimit ?? DEFAULT_REQUEST_LOG_LIMIT;
    // Seeded data is laid out relative to the start of the current UTC day, so
    // the same seed on the same day (or with the same injected clock) gives
    // the same records.
    const anchorDay = Math.floor(this.now().getTime() / DAY_MS);
    this.seed = seed;
    this.faults = new FaultInjector(seed);
    this.dispatcher = new WebhookDispatcher({ ...DEFAULT_WEBHOOK_TIMING, ...options.webhookTiming }, this.now, seed, () =>
      this.coreBaseUrl(),
    );
    const sink = { emit: this.dispatcher.emit.bind(this.dispatcher) };
    tenants.forEach((tenantOptions, position) => {
      if (this.tenants.has(tenantOptions.apikey)) throw new Error(`duplicate tenant apikey ${tenantOptions.apikey}`);
      this.tenants.set(tenantOptions.apikey, new Tenant(tenantOptions, position, { seed, anchorDay, now: this.now, sink }));
    });
    for (const practiceOptions of practices) {
      if (this.practices.has(practiceOptions.practiceId)) throw new Error(`duplicate practice ${practiceOptions.practiceId}`);
      this.practices.set(practiceOptions.practiceId, new Practice(practiceOptions, seed, anchorDay, this.now));
      this.tokens.add(practiceOptions.token);
    }
    this.server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
      this.handle(req, res).catch(() => {
        // A handler bug, or a socket destroyed under it: answer 500 if still possible.
        if (res.headersSent || res.destroyed) res.destroy();
        else sendEmpty(res, 500);
      });
    });
  }

  async listen(host: string, port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
    this.url = `http://${shown.includes(':') ? `[${shown}]` : shown}:${address.port}`;
  }

  coreBaseUrl(): string {
    return `${this.url}/api/v1`;
  }

  subsetBaseUrl(name: string): string {
    return `${this.url}/CustomAPI/${name}/api/v1`;
  }

  proBaseUrl(): string {
    return this.url;
  }

  tenant(apikey: string): TenantHandle {
    const tenant = this.tenants.get(apikey);
    if (tenant === undefined) throw new Error(`no tenant with apikey ${apikey}`);
    return tenant.handle();
  }

  practice(id: number): PracticeHandle {
    const practice = this.practices.get(id);
    if (practice === undefined) throw new Error(`no practice ${id}`);
    return practice.handle();
  }

  setFaults(faults: Faults): void {
    const { apikey, ...rest } = faults;
    if (apikey !== undefined && typeof apikey !== 'string') throw new Error('apikey must be a string');
    if (apikey === undefined) return this.faults.set(rest);
    if (Object.keys(rest).length === 0) {
      this.keyFaults.delete(apikey);
      return;
    }
    const injector = new FaultInjector(this.seed);
    injector.set(rest);
    this.keyFaults.set(apikey, injector);
  }

  stats(): SimulatorStats {
    const nowMs = this.now().getTime();
    return {
      requests: this.log.map((entry) => ({ ...entry })),
      requestsDropped: this.dropped,
      byApikey: Object.fromEntries(
        [...this.tenants.values()].map((tenant) => [tenant.apikey, this.quota.snapshot(tenant.apikey, tenant, nowMs)]),
      ),
      webhookAttempts: this.dispatcher.attempts.map((attempt) => ({ ...attempt })),
      webhookDeliveries: this.dispatcher.snapshot(),
    };
  }

  webhooksSettled(): Promise<void> {
    return this.dispatcher.settled();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.closed.abort();
    await this.dispatcher.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const route = classify(url.pathname);
    if (route.api === 'control') {
      return serveControl({ tenants: this.tenants, stats: () => this.stats(), setFaults: (f) => this.setFaults(f) }, req, res, url);
    }
    const entry: RequestLogEntry = { at: this.now(), api: route.api, method: req.method ?? 'GET', path: url.pathname, status: 0 };
    res.once('close', () => this.record(entry, res));
    // The key is logged before any fault, so a faulted request still counts against the key that sent it.
    const apikey = route.api === 'core' || route.api === 'subset' ? url.searchParams.get('apikey') : null;
    if (apikey !== null) entry.apikey = apikey;
    const faults = (apikey !== null ? this.keyFaults.get(apikey) : undefined) ?? this.faults;

    const fault = faults.draw();
    if (faults.slowMs > 0) await this.sleep(faults.slowMs);
    switch (fault.kind) {
      case 'reset':
        entry.fault = 'reset';
        req.socket.destroy();
        return;
      case 'failNext':
        entry.fault = 'failNext';
        return sendEmpty(res, 500);
      case 'error':
        entry.fault = 'error';
        return this.sendFault(res, fault.status, faults);
      case 'timeout':
        entry.fault = 'timeout';
        await this.sleep(fault.hangMs);
        if (this.closing || res.destroyed) return;
        break;
      case 'none':
        break;
    }

    switch (route.api) {
      case 'core':
        return serveCore(this.coreDeps(faults), { req, res, url, variant: 'core', segments: route.segments, log: entry });
      case 'subset':
        return serveCore(this.coreDeps(faults), {
          req,
          res,
          url,
          variant: 'subset',
          subsetName: route.subsetName,
          segments: route.segments,
          log: entry,
        });
      case 'pro':
        return servePro(
          { practices: this.practices, tokens: this.tokens },
          { req, res, url, practiceId: route.practiceId, segments: route.segments, log: entry },
        );
      case 'unknown':
        return sendText(res, 404, 'Not Found');
    }
  }

  private coreDeps(faults: FaultInjector): Parameters<typeof serveCore>[0] {
    return {
      tenants: this.tenants,
      quota: this.quota,
      faults,
      now: this.now,
      nextWebhookId: () => ++this.webhookIds,
    };
  }

  /** Injected gateway failures: empty or non-JSON bodies, as a real gateway sends. */
  private sendFault(res: ServerResponse, status: 500 | 502 | 503, faults: FaultInjector): void {
    if (status === 500) return sendEmpty(res, 500);
    if (status === 502) {
      const html = '<html><body><h1>502 Bad Gateway</h1></body></html>';
      res.writeHead(502, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(html) });
      res.end(html);
      return;
    }
    const retryAfter = faults.retryAfterSeconds;
    sendText(res, 503, 'Service Unavailable', retryAfter === undefined ? {} : { 'retry-after': retryAfter });
  }

  private record(entry: RequestLogEntry, res: ServerResponse): void {
    entry.status = res.headersSent ? res.statusCode : 0;
    this.log.push(entry);
    if (this.log.length > this.logLimit) {
      // Drop in batches so the log stays amortised O(1) per request.
      const excess = this.log.length - Math.floor(this.logLimit * 0.9);
      this.log.splice(0, excess);
      this.dropped += excess;
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return this.delay(ms, this.closed.signal).catch(() => undefined);
  }
}
