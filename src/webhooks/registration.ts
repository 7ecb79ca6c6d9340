/**
 * Webhook registrations at the Core API: the URL pmsync registers, reading the
 * registrations back, and the plan that makes them match what was asked.
 *
 * A registration is pmsync's when its WebhookUrl ends in
 * /webhooks/<source>/<token> and the token's hash is one this database
 * issued. Registrations of other integrations (or of another pmsync database
 * syncing the same account) are never changed.
 */
import { z } from 'zod';
import type { HttpClient } from '../api/http.ts';
import { insecureHttpHost } from '../config/insecure-http.ts';
import { HttpError, PmsyncError } from '../errors.ts';
import { redactUrl } from '../redact.ts';
import { canonicalEventName, EVENT_NAMES, WEBHOOK_PATH_PREFIX, type EventName } from './events.ts';
import { hashToken, isCurrent, TOKEN_PATTERN } from './secrets.ts';
import { type SecretRow } from '../state/webhook-secrets.ts';

export interface Registration {
  Id: number;
  WebhookUrl: string;
  EventType: string;
}

const registrationSchema = z.looseObject({ Id: z.number().int().positive(), WebhookUrl: z.string(), EventType: z.string() });

/**
 * Checks and normalizes the public base URL the API will deliver to (no
 * trailing slash). Plain http to another machine would carry the secret token
 * and the events unencrypted: only a source that accepts plain http
 * (`allowInsecureHttp`) may register such a URL.
 */
export function normalizePublicBase(input: string, source?: { name: string; allowInsecureHttp?: boolean }): string {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new PmsyncError('USAGE', `--url ${input}: not an absolute URL (e.g. https://sync.example.com)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new PmsyncError('USAGE', `--url ${redactUrl(url)}: must use https://`);
  if (insecureHttpHost(url) && source?.allowInsecureHttp !== true) {
    throw new PmsyncError(
      'USAGE',
      `--url ${redactUrl(url)}: plain http:// to ${url.host} would carry the webhook secret token and events unencrypted. ` +
        `Use https://, or, only where the network between the API and the receiver is trusted, set "allowInsecureHttp": true on source "${source?.name ?? '<name>'}"`,
    );
  }
  if (url.search || url.hash || url.username || url.password)
    throw new PmsyncError('USAGE', '--url must not carry a query string, fragment or credentials');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

export function registrationUrl(publicBase: string, source: string, token: string): string {
  return `${publicBase}${WEBHOOK_PATH_PREFIX}${source}/${token}`;
}

/** The public base and token of a URL pmsync would register for `source`, or null. */
export function parseRegistrationUrl(url: string, source: string): { base: string; token: string } | null {
  const tail = `${WEBHOOK_PATH_PREFIX}${source}/`;
  const at = url.lastIndexOf(tail);
  if (at < 0) return null;
  const token = url.slice(at + tail.length);
  if (!TOKEN_PATTERN.test(token)) return null;
  return { base: url.slice(0, at), token };
}

/** A URL safe to print: a pmsync token is masked, and secret query parameters and credentials of other URLs removed. */
export function maskUrl(url: string): string {
  const masked = url.replace(/(\/webhooks\/[^/]+\/)[A-Za-z0-9_-]{43}$/, '$1<secret>');
  return masked === url ? redactUrl(url) : masked;
}

export interface Owned extends Registration {
  base: string;
  token: string;
  current: boolean;
}

/** The registrations that carry a token this database issued for `source`. */
export function ownRegistrations(registrations: Registration[], source: string, secrets: SecretRow[]): Owned[] {
  const byHash = new Map(secrets.map((s) => [s.hash, s]));
  const out: Owned[] = [];
  for (const r of registrations) {
    const parsed = parseRegistrationUrl(r.WebhookUrl, source);
    const secret = parsed ? byHash.get(hashToken(parsed.token)) : undefined;
    if (parsed && secret) out.push({ ...r, ...parsed, current: isCurrent(secret) });
  }
  return out;
}

export interface PlanInput {
  source: string;
  publicBase: string;
  events: readonly EventName[];
  /** Register under a new token even when the current one could be reused. */
  rotate: boolean;
  registrations: Registration[];
  secrets: SecretRow[];
  newToken: () => string;
}

export interface RegistrationPlan {
  token: string;
  /** A new token: it is stored before the registrations are created and made current after. */
  tokenIsNew: boolean;
  url: string;
  create: EventName[];
  keep: Owned[];
  remove: Array<Owned & { why: string }>;
  /** Registrations of other integrations, left alone. */
  others: number;
}

/**
 * What to change so every wanted event has exactly one registration at the
 * target URL. The current token is reused when a registration under the same
 * public base still carries it (the API returns the URL, so the plaintext is
 * recoverable there and nowhere else); otherwise a new token is issued and
 * every pmsync registration of the source moves to it, so no event that was
 * registered before is dropped. Registering never removes an event; `delete`
 * does.
 */
export function planRegistration(input: PlanInput): RegistrationPlan {
  const owned = ownRegistrations(input.registrations, input.source, input.secrets);
  const reusable = input.rotate ? undefined : owned.find((r) => r.current && r.base === input.publicBase);
  const token = reusable?.token ?? input.newToken();
  const url = registrationUrl(input.publicBase, input.source, token);
  const wanted = new Set<EventName>(input.events);
  for (const r of owned) {
    const e = canonicalEventName(r.EventType);
    if (e) wanted.add(e);
  }
  const keep: Owned[] = [];
  const remove: RegistrationPlan['remove'] = [];
  const covered = new Set<EventName>();
  // The spec does not show what the API does with a pair registered twice;
  // pmsync keeps the oldest and deletes the others.
  for (const r of [...owned].sort((a, b) => a.Id - b.Id)) {
    const e = canonicalEventName(r.EventType);
    if (r.WebhookUrl !== url || !e) remove.push({ ...r, why: r.base === input.publicBase ? 'an older secret token' : 'another URL' });
    else if (covered.has(e)) remove.push({ ...r, why: 'a duplicate' });
    else {
      covered.add(e);
      keep.push(r);
    }
  }
  return {
    token,
    tokenIsNew: reusable === undefined,
    url,
    create: EVENT_NAMES.filter((e) => wanted.has(e) && !covered.has(e)),
    keep,
    remove,
    others: input.registrations.length - owned.length,
  };
}

/** The registration API (Core only), through the source's client: credentials, quota (reserve allowed), no redirects. */
export class RegistrationApi {
  private readonly client: HttpClient;

  constructor(client: HttpClient) {
    this.client = client;
  }

  async list(): Promise<Registration[]> {
    const res = await this.client.get('/webhooks', {}, { purpose: 'resync' });
    const parsed = z.array(registrationSchema).safeParse(res.body);
    if (!parsed.success)
      throw new PmsyncError('BAD_RESPONSE', 'GET /webhooks did not answer a list of registrations (Id, WebhookUrl, EventType)');
    return parsed.data;
  }

  async get(id: number): Promise<Registration | null> {
    try {
      const res = await this.client.get(`/webhooks/${id}`, {}, { purpose: 'resync' });
      const parsed = registrationSchema.safeParse(res.body);
      if (!parsed.success) throw new PmsyncError('BAD_RESPONSE', `GET /webhooks/${id} did not answer a registration`);
      return parsed.data;
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return null;
      throw err;
    }
  }

  async create(event: EventName, url: string): Promise<void> {
    await this.client.send('POST', '/webhooks', {}, { EventName: event, WebhookUrl: url }, { purpose: 'resync' });
  }

  /** False when the registration was already gone. */
  async delete(id: number): Promise<boolean> {
    try {
      await this.client.send('DELETE', `/webhooks/${id}`, {}, undefined, { purpose: 'resync' });
      return true;
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return false;
      throw err;
    }
  }
}
