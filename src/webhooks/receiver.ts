/**
 * The webhook receiver: a node:http request handler for POST
 * /webhooks/<source>/<token>. It checks, in this order, and stops at the first
 * failure: the path, the method, the secret token (constant-time, before the
 * body is read), the content type, the body size, the JSON body, the expected
 * TenantId, and the record Url. An accepted delivery is stored (marking its
 * stream for a check, or with its record's refresh job) before the reply, so
 * the reply takes one short transaction.
 *
 * What it trusts: a valid token proves the delivery came from someone who
 * knows the registered URL (the API, or whoever can read its registrations).
 * It does NOT make the body trustworthy: the Url only names a record, and is
 * accepted only in the allow-listed shapes below the source's base URL; the
 * record itself is always fetched from the configured base URL with pmsync's
 * own credentials. See docs/webhooks.md.
 *
 * Nothing here logs the request path: it contains the secret token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config, RestSourceConfig } from '../config/schema.ts';
import type { Pool } from '../db/pool.ts';
import type { Logger } from '../log.ts';
import { WEBHOOKS } from './catalog.ts';
import { deliverySchema, WEBHOOK_PATH_PREFIX } from './events.ts';
import { recordDelivery, type InboxOutcome } from './inbox.ts';
import type { RefreshQueue } from './queue.ts';
import { matchRecordUrl } from './record-url.ts';
import { isAccepted, tokenMatches } from './secrets.ts';
import { loadSecrets, type SecretRow } from '../state/webhook-secrets.ts';
import { streamCatalog } from '../scheduler/catalog.ts';
import { planStreams } from '../scheduler/plan.ts';

export { WEBHOOK_PATH_PREFIX };
/** Secrets are re-read at least this often, so a rotation or revocation reaches every replica. */
const SECRET_CACHE_MS = 5_000;
/** An unknown token may trigger a re-read (a token registered moments ago), at most this often per source. */
const SECRET_RELOAD_MIN_MS = 1_000;
/** Retry-After of a 503; the API retries every 30 s whatever it says (spec "Delivery"). */
const RETRY_AFTER_SECONDS = 30;

export interface ReceiverDeps {
  /** The configuration in force (a reload replaces it); its `webhooks` settings are read once, at start. */
  config: () => Config;
  pool: Pool;
  logger: Logger;
  queue: Pick<RefreshQueue, 'enqueue'>;
  now?: () => Date;
}

export interface ReceiverStats {
  /** Deliveries by what became of them. */
  notified: number;
  queued: number;
  coalesced: number;
  duplicate: number;
  rejected: number;
  /** Wrong or missing token, or a source that takes no webhooks. */
  unauthorized: number;
  /** Malformed requests: method, content type, size, JSON or body fields, TenantId. */
  invalid: number;
  /** The delivery could not be stored (database unreachable); the API will retry it. */
  failed: number;
}

export interface WebhookReceiver {
  /** Handles one request whose path starts with WEBHOOK_PATH_PREFIX. */
  handler(req: IncomingMessage, res: ServerResponse): void;
  stats(): ReceiverStats;
}

export function createWebhookReceiver(deps: ReceiverDeps): WebhookReceiver {
  const now = deps.now ?? (() => new Date());
  const settings = deps.config().webhooks;
  const log = deps.logger.child({ component: 'webhook-receiver' });
  const counts: ReceiverStats = { notified: 0, queued: 0, coalesced: 0, duplicate: 0, rejected: 0, unauthorized: 0, invalid: 0, failed: 0 };
  // Which streams a notification marks for a check, for the configuration it was worked out from.
  let triggers = { config: deps.config(), streams: notifiedStreams(deps.config()) };
  const notifying = (config: Config) => {
    if (triggers.config !== config) triggers = { config, streams: notifiedStreams(config) };
    return triggers.streams;
  };
  const secrets = new Map<string, { rows: SecretRow[]; loadedAt: number }>();

  async function accepted(source: string, token: string): Promise<boolean> {
    const at = now();
    let cached = secrets.get(source);
    const age = cached ? at.getTime() - cached.loadedAt : Infinity;
    const hashes = () => (cached?.rows ?? []).filter((r) => isAccepted(r, at)).map((r) => r.hash);
    if (age < SECRET_CACHE_MS && tokenMatches(token, hashes())) return true;
    if (age < SECRET_RELOAD_MIN_MS) return false;
    cached = { rows: await loadSecrets(deps.pool, source), loadedAt: at.getTime() };
    secrets.set(source, cached);
    return tokenMatches(token, hashes());
  }

  function reply(res: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
    if (res.headersSent) return;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      ...headers,
    });
    res.end(text);
  }

  function refuse(
    res: ServerResponse,
    status: number,
    error: string,
    counter: 'unauthorized' | 'invalid',
    headers: Record<string, string> = {},
  ): void {
    counts[counter] += 1;
    // Refused before its body was read: close rather than read an unwanted body to keep the connection.
    const unread = !res.req.complete;
    reply(res, status, { error }, unread ? { connection: 'close', ...headers } : headers);
  }

  /** 503 with Retry-After: the database is unreachable, and the API retries non-2xx deliveries. */
  function unavailable(res: ServerResponse): void {
    counts.failed += 1;
    const unread = !res.req.complete;
    reply(
      res,
      503,
      { error: 'temporarily unavailable' },
      { 'retry-after': String(RETRY_AFTER_SECONDS), ...(unread ? { connection: 'close' } : {}) },
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0]!;
    if (!path.startsWith(WEBHOOK_PATH_PREFIX)) return refuse(res, 404, 'not found', 'invalid');
    const parts = path.slice(WEBHOOK_PATH_PREFIX.length).split('/');
    if (parts.length > 2) return refuse(res, 404, 'not found', 'invalid');
    if (req.method !== 'POST') return refuse(res, 405, 'only POST is accepted', 'invalid', { allow: 'POST' });

    const [sourceName = '', token = ''] = parts;
    const config = deps.config();
    const source = config.sources.find((s): s is RestSourceConfig & { kind: 'core' } => s.name === sourceName && s.kind === 'core');
    let known: boolean;
    try {
      known = source !== undefined && (await accepted(source.name, token));
    } catch (err) {
      // The tokens live in the database: without it no delivery can be checked (or stored), so the API is asked to retry.
      log.error({ source: source?.name ?? null, err }, 'secret tokens could not be read; answering 503 so the API retries');
      return unavailable(res);
    }
    // Unknown sources and bad tokens get the same answer.
    if (!source || !known) {
      log.warn(
        { source: source?.name ?? null, remote: req.socket.remoteAddress },
        'delivery refused: unknown source or wrong secret token',
      );
      return refuse(res, 401, 'unauthorized', 'unauthorized');
    }
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) return refuse(res, 415, 'Content-Type must be application/json', 'invalid');

    const body = await readBody(req, settings.maxBodyBytes);
    if (body === 'aborted') return;
    if (body === 'too_large') {
      refuse(res, 413, `the body exceeds ${settings.maxBodyBytes} bytes`, 'invalid');
      res.on('finish', () => req.destroy());
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      return refuse(res, 400, 'the body is not JSON', 'invalid');
    }
    const parsed = deliverySchema.safeParse(json);
    if (!parsed.success) {
      const fields = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(body)'))];
      log.warn({ source: source.name, fields }, 'delivery refused: invalid body');
      return refuse(res, 400, `invalid field(s): ${fields.join(', ')}`, 'invalid');
    }
    const delivery = parsed.data;
    const expectedTenant = source.webhook.tenantId;
    if (expectedTenant !== undefined && delivery.TenantId !== expectedTenant) {
      log.warn({ source: source.name, eventId: delivery.EventId }, 'delivery refused: TenantId is not the one configured for this source');
      return refuse(res, 403, 'unexpected TenantId', 'invalid');
    }

    const match = matchRecordUrl(delivery.Url, source.baseUrl);
    const about = WEBHOOKS.resourceOf.get(delivery.EventType);
    const target = !match.ok
      ? { reason: match.reason }
      : match.resource !== about
        ? { reason: `a ${delivery.EventType} event must point to ${about}, not ${match.resource}` }
        : { resource: match.resource, id: match.id };
    if ('reason' in target) {
      log.warn(
        { source: source.name, eventId: delivery.EventId, eventType: delivery.EventType, reason: target.reason },
        'event rejected: its Url is not a record URL of this source; nothing is fetched',
      );
    }
    let outcome: InboxOutcome;
    try {
      const notify = 'resource' in target && notifying(config).has(`${source.name}/${target.resource}`);
      outcome = await recordDelivery(deps.pool, deps.queue, { source: source.name, delivery, target, notify, receivedAt: now() });
    } catch (err) {
      log.error(
        { source: source.name, eventId: delivery.EventId, err },
        'delivery could not be stored; answering 503 so the API retries it',
      );
      return unavailable(res);
    }
    counts[outcome] += 1;
    log.debug({ source: source.name, eventId: delivery.EventId, eventType: delivery.EventType, outcome }, 'delivery received');
    // A rejected event is acknowledged too: retrying the same body cannot change the verdict.
    reply(res, 200, { status: outcome });
  }

  return {
    handler(req, res) {
      handle(req, res).catch((err: unknown) => {
        counts.failed += 1;
        log.error({ err }, 'webhook receiver failed on a request');
        reply(res, 500, { error: 'internal error' });
      });
    },
    stats: () => ({ ...counts }),
  };
}

/**
 * Streams whose notifications mark them for a check rather than fetch their
 * record: those serve schedules by budget and reads incrementally (see the
 * `refresh` webhook setting).
 */
export function notifiedStreams(config: Config): Set<string> {
  if (config.webhooks.refresh === 'record') return new Set();
  const planned = planStreams(config.schedules, config.sources, streamCatalog);
  return new Set(planned.streams.filter((s) => s.schedule.mode === 'budget' && s.kind === 'incremental').map((s) => s.key));
}

/**
 * The body as a Buffer; 'too_large' as soon as it passes `max` bytes (by header
 * or by count; the rest is not read); 'aborted' when the client went away.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too_large' | 'aborted'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve('too_large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (value: Buffer | 'too_large' | 'aborted') => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        settle('too_large');
      } else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => settle(Buffer.concat(chunks)));
    req.once('close', () => settle('aborted'));
    req.once('error', (err) => (settled ? undefined : reject(err)));
  });
}
