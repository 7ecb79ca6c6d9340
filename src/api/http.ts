/**
 * The one place requests leave pmsync. Built once per source: it adds the
 * credentials, asks the request budget (quota ledger + limiter) before every
 * attempt, times out, branches on status before parsing (non-2xx bodies may be
 * empty or not JSON), retries what can succeed on a retry, and turns every
 * failure into a typed error whose message carries no secret.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { HttpError, PmsyncError, ShutdownError, TimeoutError } from '../errors.ts';
import { storableText } from '../db/storable.ts';
import { redactUrl, type Redactor } from '../redact.ts';
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_RETRY, type CredentialNames, type RetryPolicy } from '../config/schema.ts';
import type { Logger } from '../log.ts';

/**
 * Why a request is sent. The quota ledger (src/state/quota.ts) decides from it
 * which share of the day's quota the request may spend:
 * - check: a scheduled incremental check of a stream that is caught up;
 * - backfill: reading a window that is not finished (a first pass, or a check
 *   that turned out larger than a few pages);
 * - webhook: a check or a record fetch triggered by webhook notifications;
 * - full: a full-refresh pass;
 * - resync: on-demand requests an operator asked for (resync, status --check,
 *   webhook registration).
 */
export type Purpose = 'check' | 'backfill' | 'webhook' | 'resync' | 'full';

export const PURPOSES: readonly Purpose[] = ['check', 'backfill', 'webhook', 'resync', 'full'];

export interface RequestBudget {
  /** Counts one request before it is sent; throws QuotaExhaustedError when none is left. */
  take(purpose: Purpose): Promise<void>;
  /** The server answered 429: remember the key is exhausted until its reset. */
  exhausted(): Promise<Error>;
}

/** Of an error answer (non-2xx) only this much is read: enough for the message, never the whole of a hostile body. */
const ERROR_BODY_BYTES = 64 * 1024;
/** undici's codes for its header and body timers (a connect timeout is a network failure). */
const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
/** Characters of an error body quoted in an error message, after redaction. */
const ERROR_DETAIL_CHARS = 300;

export interface Auth {
  /** Adds credentials to the URL's query and the headers. */
  apply(url: URL, headers: Record<string, string>): void;
  /** Says which credentials to check after a 401. */
  hint: string;
}

export interface RequestStats {
  requests: number;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  /** When the attempt that succeeded was sent. */
  sentAt: Date;
}

export interface ClientOptions {
  sourceName: string;
  baseUrl: string;
  auth: Auth;
  budget: RequestBudget;
  /** Runs each attempt; the limiter's schedule function (concurrency and spacing). */
  schedule: <T>(fn: () => Promise<T>) => Promise<T>;
  redactor: Redactor;
  logger: Logger;
  /** Deadline of one attempt, from sending the request to the last byte of the body. */
  timeoutMs: number;
  /** Largest body accepted (DEFAULT_MAX_RESPONSE_BYTES when unset). */
  maxResponseBytes?: number;
  retry?: RetryPolicy;
  dispatcher?: Dispatcher;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock the retries' time bound (retry.maxElapsedMs) is measured on: Date.now unless injected. */
  now?: () => number;
}

export interface GetOptions {
  purpose?: Purpose;
  stats?: RequestStats;
  signal?: AbortSignal;
}

export class HttpClient {
  readonly sourceName: string;
  readonly baseUrl: string;
  private readonly opts: ClientOptions;
  private readonly dispatcher: Dispatcher;
  private readonly retry: RetryPolicy;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.sourceName = opts.sourceName;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.dispatcher = opts.dispatcher ?? new Agent({ connect: { timeout: Math.min(opts.timeoutMs, 10_000) }, keepAliveTimeout: 10_000 });
  }

  /** GET a path below the base URL (e.g. "/customers") and parse the JSON body. */
  async get(path: string, query: Record<string, string | number | undefined> = {}, options: GetOptions = {}): Promise<HttpResponse> {
    return this.send('GET', path, query, undefined, options);
  }

  async send(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    query: Record<string, string | number | undefined>,
    body: unknown,
    options: GetOptions = {},
  ): Promise<HttpResponse> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    this.opts.auth.apply(url, headers);
    const shown = redactUrl(url);
    const now = this.opts.now ?? Date.now;
    const started = now();
    const sleep = this.opts.sleep ?? abortableSleep;
    const random = this.opts.random ?? Math.random;
    const signal = options.signal;

    for (let attempt = 1; ; attempt++) {
      try {
        // Redirects are never followed: undici's request() returns 3xx as is.
        return await this.opts.schedule(async () => {
          // A shutdown while this attempt waited for the limiter: nothing is sent or counted.
          if (signal?.aborted) throw new ShutdownError();
          await this.opts.budget.take(options.purpose ?? 'check');
          if (options.stats) options.stats.requests += 1;
          return this.attempt(method, url, headers, body, shown, signal);
        });
      } catch (err) {
        if (signal?.aborted) throw new ShutdownError();
        // 429 means the day's quota is gone: retrying would only be refused again until the reset.
        if (err instanceof HttpError && err.status === 429) throw await this.opts.budget.exhausted();
        const retryAfterMs = err instanceof RetryAfter ? err.ms : undefined;
        const final = err instanceof RetryAfter ? err.error : err;
        const retryable = final instanceof PmsyncError && final.retryable;
        const elapsed = now() - started;
        if (!retryable || attempt >= this.retry.maxAttempts) throw final;
        const backoff = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
        const delay = Math.max(retryAfterMs ?? 0, Math.floor(random() * backoff));
        // Never retry earlier than the server asked, and never start a retry past the time bound.
        if (elapsed + delay > this.retry.maxElapsedMs) throw final;
        this.opts.logger.warn(
          { source: this.sourceName, url: shown, attempt, delayMs: delay, retryAfterMs, code: (final as PmsyncError).code },
          'request failed; retrying',
        );
        await sleep(delay, signal);
        if (signal?.aborted) throw new ShutdownError();
      }
    }
  }

  private async attempt(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: unknown,
    shown: string,
    signal?: AbortSignal,
  ): Promise<HttpResponse> {
    const sentAt = new Date();
    // A total deadline, not a gap between chunks: a body trickling one byte at a time must not hold the request (and a serve stream's lock).
    const deadline = AbortSignal.timeout(this.opts.timeoutMs);
    const aborted = signal ? AbortSignal.any([signal, deadline]) : deadline;
    const failed = (err: unknown): PmsyncError => {
      if (err instanceof PmsyncError) return err;
      // undici's own header and body timers are set to the same deadline and may fire first.
      const timedOut = deadline.aborted || UNDICI_TIMEOUTS.has((err as { code?: string }).code ?? '');
      if (timedOut && !signal?.aborted) {
        return new TimeoutError(`${this.where(method, shown)} did not complete within ${this.opts.timeoutMs} ms (requestTimeoutMs)`);
      }
      return this.networkError(err, shown);
    };
    let res: Dispatcher.ResponseData<unknown>;
    try {
      res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.dispatcher,
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
        signal: aborted,
      });
    } catch (err) {
      throw failed(err);
    }
    const status = res.statusCode;
    const ok = status >= 200 && status < 300;
    let text: string;
    try {
      text = ok ? await this.readBody(res, method, shown) : await readPrefix(res, ERROR_BODY_BYTES);
    } catch (err) {
      throw failed(err);
    }
    if (ok) {
      if (status === 204 || text.length === 0) return { status, headers: res.headers, body: null, sentAt };
      try {
        return { status, headers: res.headers, body: JSON.parse(text), sentAt };
      } catch {
        throw new HttpError(
          'BAD_RESPONSE',
          status,
          shown,
          `${this.where(method, shown)} answered ${status} with a body that is not JSON`,
          true,
        );
      }
    }
    const err = this.statusError(method, status, shown, text);
    const retryAfter = parseRetryAfter(res.headers['retry-after']);
    if (err.retryable && retryAfter !== undefined) throw new RetryAfter(err, retryAfter);
    throw err;
  }

  /** A success body, refused (and the connection dropped) as soon as it passes maxResponseBytes, by header or by count. */
  private async readBody(res: Dispatcher.ResponseData<unknown>, method: string, shown: string): Promise<string> {
    const max = this.opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const tooLarge = () => {
      res.body.destroy();
      return new HttpError(
        'BAD_RESPONSE',
        res.statusCode,
        shown,
        `${this.where(method, shown)} answered a body larger than ${max} bytes (maxResponseBytes); a page is normally a few hundred KB, so it was cut off and is not retried. Raise maxResponseBytes for this source only if its records really are that large`,
        false,
      );
    };
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > max) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks, size).toString('utf8');
  }

  private where(method: string, shown: string): string {
    return `source "${this.sourceName}": ${method} ${shown}`;
  }

  private statusError(method: string, status: number, shown: string, text: string): HttpError {
    // Redacted whole, then cut: cutting first could leave the head of a secret that straddles the cut unrecognised.
    const quoted = Array.from(
      storableText(this.opts.redactor.redact(text))
        .replace(/[\s\p{Cc}]+/gu, ' ')
        .trim(),
    )
      .slice(0, ERROR_DETAIL_CHARS)
      .join('');
    const detail = quoted ? `: ${quoted}` : '';
    const where = this.where(method, shown);
    if (status === 401)
      return new HttpError('AUTH_FAILED', status, shown, `${where} was refused (401 Unauthorized). ${this.opts.auth.hint}`, false);
    if (status === 404) return new HttpError('NOT_FOUND', status, shown, `${where}: not found or not visible to this user (404)`, false);
    if (status === 429)
      return new HttpError('QUOTA_EXHAUSTED', status, shown, `${where}: the daily request quota is exhausted (429)`, false);
    if (status === 400 || status === 422)
      return new HttpError('VALIDATION_FAILED', status, shown, `${where} was rejected as invalid (${status})${detail}`, false);
    if (status === 408 || status >= 500) return new HttpError('RETRYABLE', status, shown, `${where} failed with ${status}${detail}`, true);
    if (status >= 300 && status < 400)
      return new HttpError('HTTP_ERROR', status, shown, `${where} answered a redirect (${status}); redirects are not followed`, false);
    return new HttpError('HTTP_ERROR', status, shown, `${where} failed with ${status}${detail}`, false);
  }

  private networkError(err: unknown, shown: string): PmsyncError {
    const code = (err as { code?: string }).code ?? '';
    const message = this.opts.redactor.redact((err as Error).message ?? String(err));
    if (code === 'ENOTFOUND' || code === 'ECONNREFUSED' || code === 'EAI_AGAIN') {
      return new PmsyncError('API_UNREACHABLE', `source "${this.sourceName}": cannot reach ${shown} (${code}: ${message})`, {
        retryable: true,
      });
    }
    return new PmsyncError('RETRYABLE', `source "${this.sourceName}": ${shown} failed: ${code || 'network error'} ${message}`.trim(), {
      retryable: true,
    });
  }

  async close(): Promise<void> {
    if (!this.opts.dispatcher) await this.dispatcher.close();
  }
}

/** The first `max` bytes of a body as text; the rest is not downloaded (the connection is dropped). */
async function readPrefix(res: Dispatcher.ResponseData<unknown>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= max) {
      res.body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

/** Waits, but wakes early on shutdown so a long backoff does not hold the process. */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

class RetryAfter extends Error {
  readonly error: HttpError;
  readonly ms: number;
  constructor(error: HttpError, ms: number) {
    super(error.message);
    this.error = error;
    this.ms = ms;
  }
}

/**
 * Retry-After in seconds or as an HTTP date; capped so a hostile value cannot
 * stall a run for days. The spec does not say the API sends it; when it does,
 * pmsync never retries earlier.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const cap = 5 * 60_000;
  if (/^\d+$/.test(v.trim())) return Math.min(cap, Number(v.trim()) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.min(cap, Math.max(0, at - now));
}

/** Core and Subset: gateway apikey query parameter plus HTTP Basic (or its api_key query form). */
export function restAuth(s: {
  apikey: string;
  username: string;
  password: string;
  credentialsIn: 'header' | 'query';
  name: string;
  credentialNames?: CredentialNames;
}): Auth {
  const basic = Buffer.from(`${s.username}:${s.password}`).toString('base64');
  const n = s.credentialNames ?? {};
  // Where the credentials were configured when known (CORE_* variables, or a config file entry).
  const pair =
    (n.apikey && n.username && n.password ? `${n.apikey}, ${n.username} and ${n.password}` : 'its apikey, username and password') +
    (n.where ? ` in ${n.where}` : '');
  return {
    apply(url, headers) {
      url.searchParams.set('apikey', s.apikey);
      if (s.credentialsIn === 'query') url.searchParams.set('api_key', basic);
      else headers.authorization = `Basic ${basic}`;
    },
    hint: `Check the gateway key and the API user of source "${s.name}" (${pair}); the user must be active.`,
  };
}

/** Pro: the bare token in Authorization, no scheme word. */
export function proAuth(s: { token: string; name: string; credentialNames?: CredentialNames }): Auth {
  return {
    apply(_url, headers) {
      headers.authorization = s.token;
    },
    hint: `Check the token of source "${s.name}" (${s.credentialNames?.token ?? 'its token'}${s.credentialNames?.where ? ` in ${s.credentialNames.where}` : ''}).`,
  };
}

/** The Basic value derived from the credentials is itself a secret to redact. */
export function basicValue(username: string, password: string): string {
  return Buffer.from(`${username}:${password}`).toString('base64');
}
