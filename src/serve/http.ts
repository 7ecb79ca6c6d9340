/**
 * The HTTP side of `pmsync serve` (node:http): the status page on /,
 * /healthz, /readyz, /metrics, and the webhook receiver under /webhooks/ when
 * it is enabled.
 *
 * With a status token set (PMSYNC_STATUS_TOKEN or PMSYNC_STATUS_TOKEN_FILE),
 * the status page and /metrics answer only a request that carries
 * `Authorization: Bearer <token>`: they name the practice's sources and how
 * busy they are. /healthz and /readyz stay open for the orchestrator's probes
 * (they say only whether the process and its database are up), and
 * /webhooks/ checks its own secret token per source.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Readiness } from './readiness.ts';

export const WEBHOOK_PREFIX = '/webhooks/';
/** What the status token protects. */
export const PROTECTED_PATHS: readonly string[] = ['/', '/metrics'];

export interface HttpDeps {
  /** False once shutdown began: /readyz answers 503 and new webhook deliveries are refused. */
  accepting(): boolean;
  readiness(): Promise<Readiness>;
  metrics(): Promise<{ contentType: string; body: string }>;
  /** The status page's HTML (src/serve/status-page.ts), given the query string (`?source=NAME`). */
  statusPage?: (query: URLSearchParams) => Promise<string>;
  /** Handles requests under /webhooks/; absent when no receiver runs. */
  webhooks?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The bearer token the status page and /metrics ask for; open when absent. */
  statusToken?: string;
  onError?: (err: unknown) => void;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Whether a request's Authorization header carries the token. Both sides are
 * hashed first, so the comparison takes the same time whatever the length or
 * the first differing character of what was sent.
 */
function bearerCheck(token: string): (header: string | undefined) => 'ok' | 'missing' | 'wrong' {
  const expected = digest(token);
  return (header) => {
    const sent = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
    if (sent === undefined) return 'missing';
    return timingSafeEqual(digest(sent), expected) ? 'ok' : 'wrong';
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

export function createServeHttp(deps: HttpDeps): Server {
  const check = deps.statusToken === undefined ? undefined : bearerCheck(deps.statusToken);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const [path, query] = (req.url ?? '/').split('?') as [string, string | undefined];
    if (path.startsWith(WEBHOOK_PREFIX)) {
      if (!deps.webhooks) return json(res, 404, { error: 'the webhook receiver is not enabled on this server' });
      // The API retries a refused delivery 30 s later, when another replica (or this one, restarted) takes it.
      if (!deps.accepting()) return json(res, 503, { error: 'shutting down' });
      return deps.webhooks(req, res);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return json(res, 405, { error: 'method not allowed' });
    }
    if (check && PROTECTED_PATHS.includes(path)) {
      const outcome = check(req.headers.authorization);
      if (outcome !== 'ok') {
        // RFC 6750: a missing token gets the scheme alone, a wrong one the reason too.
        res.setHeader('www-authenticate', outcome === 'missing' ? 'Bearer realm="pmsync"' : 'Bearer realm="pmsync", error="invalid_token"');
        return json(res, 401, {
          error:
            outcome === 'missing'
              ? 'this page needs "Authorization: Bearer <token>" (PMSYNC_STATUS_TOKEN)'
              : 'the bearer token is not valid',
        });
      }
    }
    if (path === '/' && deps.statusPage) {
      const html = await deps.statusPage(new URLSearchParams(query ?? ''));
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(html),
        'cache-control': 'no-store',
        // No script, no frame, nothing loaded from elsewhere: the page is its own inline CSS.
        'content-security-policy':
          "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      });
      res.end(req.method === 'HEAD' ? undefined : html);
      return;
    }
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      if (!deps.accepting()) return json(res, 503, { status: 'stopping' });
      const r = await deps.readiness();
      return json(res, r.ready ? 200 : 503, r.ready ? { status: 'ready' } : { status: 'not ready', problems: r.problems });
    }
    if (path === '/metrics') {
      const m = await deps.metrics();
      res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store' });
      res.end(m.body);
      return;
    }
    json(res, 404, { error: 'not found', paths: ['/', '/healthz', '/readyz', '/metrics', `${WEBHOOK_PREFIX}...`] });
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      deps.onError?.(err);
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  // Probes and scrapes are short; a slow client must not pin a socket for ever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return server;
}
