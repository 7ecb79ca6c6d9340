import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultInjector } from '../faults.ts';
import type { Headers } from '../http.ts';
import { isRecord, parseInteger, Query, readJson, sendEmpty, sendJson, sendMessage, sendText } from '../http.ts';
import type { QuotaLedger } from '../quota.ts';
import type { EventName, RequestLogEntry, WebhookRegistration } from '../types.ts';
import { EVENT_NAMES } from '../types.ts';
import type { ResourceDef } from './resources.ts';
import type { ListFilter, ResourceStore } from './store.ts';
import type { Tenant } from './tenant.ts';

// The Core API (/api/v1) and Subset API (/CustomAPI/<name>/api/v1): gateway
// key + Basic auth, the daily quota, paged lists with Data* headers, single
// records, and (Core only) webhook registrations.

export const MAX_ROWS = 100;

export interface CoreDeps {
  readonly tenants: ReadonlyMap<string, Tenant>;
  readonly quota: QuotaLedger;
  readonly faults: FaultInjector;
  readonly now: () => Date;
  nextWebhookId(): number;
}

export interface CoreRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly variant: 'core' | 'subset';
  readonly subsetName?: string;
  /** Path segments after /api/v1, as sent. */
  readonly segments: readonly string[];
  readonly log: RequestLogEntry;
}

export async function serveCore(deps: CoreDeps, request: CoreRequest): Promise<void> {
  const { res, url, log } = request;
  const apikey = url.searchParams.get('apikey');
  if (apikey !== null) log.apikey = apikey;
  const tenant = authenticate(deps, request);
  if (tenant === undefined) {
    sendText(res, 401, 'Unauthorized', { 'www-authenticate': 'Basic realm="api"' });
    return;
  }
  if (deps.faults.quotaExhausted()) {
    deps.quota.reject(tenant.apikey);
    log.fault = 'quotaExhausted';
    sendMessage(res, 429, 'Daily request quota exceeded');
    return;
  }
  if (!deps.quota.admit(tenant.apikey, tenant, deps.now().getTime())) {
    sendMessage(res, 429, 'Daily request quota exceeded');
    return;
  }
  await route(deps, request, tenant);
}

function authenticate(deps: CoreDeps, { req, url, variant, subsetName }: CoreRequest): Tenant | undefined {
  const apikey = url.searchParams.get('apikey');
  if (!apikey) return undefined;
  const tenant = deps.tenants.get(apikey);
  if (tenant === undefined || tenant.variant !== variant) return undefined;
  if (variant === 'subset' && tenant.subsetName?.toLowerCase() !== subsetName?.toLowerCase()) return undefined;
  const header = req.headers.authorization;
  const token = header === undefined ? url.searchParams.get('api_key') : /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header.trim())?.[1];
  return token && tenant.credentialsMatch(token) ? tenant : undefined;
}

async function route(deps: CoreDeps, request: CoreRequest, tenant: Tenant): Promise<void> {
  const { req, res, segments } = request;
  const method = req.method ?? 'GET';
  const path = segments.map((s) => s.toLowerCase());
  const [head, id, tail] = segments;
  const isCore = tenant.variant === 'core';

  if (path.length === 1 && path[0] === 'status' && isCore) {
    if (method !== 'GET') return notAllowed(res, 'GET');
    return sendJson(res, 200, { Status: 'OK', Version: 'v1', ServerTime: deps.now().toISOString() });
  }
  if (path[0] === 'webhooks' && isCore) {
    if (path.length === 1) {
      if (method === 'POST') return createWebhook(deps, request, tenant);
      if (method === 'GET') return listWebhooks(request, tenant);
      return notAllowed(res, 'GET, POST');
    }
    if (path.length === 2 && id !== undefined) {
      if (method === 'GET') return getWebhook(res, tenant, id);
      if (method === 'DELETE') return deleteWebhook(res, tenant, id);
      return notAllowed(res, 'GET, DELETE');
    }
  }
  const store = head === undefined ? undefined : tenant.store(head.toLowerCase());
  if (store !== undefined) {
    const resource = store.def.name;
    const single =
      (path.length === 2 && (resource === 'customers' || resource === 'orders')) ||
      (path.length === 3 && resource === 'appointments' && tail?.toLowerCase() === 'details');
    if (path.length === 1) {
      if (method !== 'GET') return notAllowed(res, 'GET');
      return listRecords(deps, request, tenant, store);
    }
    if (single && id !== undefined) {
      if (method !== 'GET') return notAllowed(res, 'GET');
      const index = store.indexOf(id);
      if (index < 0) return sendMessage(res, 404, `No ${resource} record with that id`);
      return sendJson(res, 200, store.record(index));
    }
  }
  sendMessage(res, 404, 'No such resource');
}

function notAllowed(res: ServerResponse, allow: string): void {
  sendEmpty(res, 405, { allow });
}

function listRecords(deps: CoreDeps, { res, url }: CoreRequest, tenant: Tenant, store: ResourceStore): void {
  const query = new Query(url.searchParams);
  const def = store.def;
  const pageText = query.get('Page');
  const rowsText = query.get('Rows');
  const page = pageText === undefined ? 1 : parseInteger(pageText, 1);
  if (page === undefined) return sendMessage(res, 400, 'Page must be a positive integer');
  const requestedRows = rowsText === undefined ? def.defaultRows : parseInteger(rowsText, 1);
  if (requestedRows === undefined) return sendMessage(res, 400, 'Rows must be a positive integer');
  const rows = Math.min(requestedRows, MAX_ROWS);
  const filter = buildFilter(tenant, def, query);
  if (typeof filter === 'string') return sendMessage(res, 400, filter);

  const listing = store.listing(filter);
  const total = listing.total;
  const totalPages = Math.ceil(total / rows);
  const indexes: number[] = [];
  const offset = (page - 1) * rows;
  for (let p = offset; p < Math.min(offset + rows, total); p++) indexes.push(listing.at(p));
  const body = indexes.map((index) => store.record(index));
  const headers: Headers = tenant.dataHeaders(def.name)
    ? {
        DataTotalRows: total,
        DataTotalPages: totalPages,
        DataCurrentPage: page,
        DataNextPage: Math.min(page + 1, Math.max(totalPages, 1)),
        DataPriorPage: Math.max(page - 1, 1),
      }
    : {};
  sendJson(res, 200, body, headers);

  // Records that change while a client pages (fault mutateBetweenPages):
  // changing rows of this page shifts later rows under a fixed window.
  const mutations = deps.faults.mutationsAfterPage(def.name);
  if (mutations > 0) {
    for (const position of deps.faults.choose(indexes.length, mutations)) {
      const index = indexes[position];
      if (index !== undefined && store.isLive(index)) tenant.update(def.name, index);
    }
  }
}

function buildFilter(tenant: Tenant, def: ResourceDef, query: Query): ListFilter | string {
  const parts: string[] = [];
  const checks: Array<(fields: Record<string, unknown>) => boolean> = [];
  let modifiedFromMs: number | undefined;
  let modifiedToMs: number | undefined;

  const start = query.get('ModifiedOnStart');
  if (start !== undefined) {
    modifiedFromMs = tenant.clock.parse(start, false);
    if (modifiedFromMs === undefined) return 'ModifiedOnStart is not a valid date or date-time';
    parts.push(`mfrom=${modifiedFromMs}`);
  }
  const end = query.get('ModifiedOnEnd');
  if (end !== undefined) {
    modifiedToMs = tenant.clock.parse(end, true);
    if (modifiedToMs === undefined) return 'ModifiedOnEnd is not a valid date or date-time';
    parts.push(`mto=${modifiedToMs}`);
  }
  const companyId = def.hasCompany ? query.get('CompanyId') : undefined;
  if (companyId !== undefined) {
    checks.push((f) => f.CompanyId === companyId);
    parts.push(`company=${companyId}`);
  }
  const isActive = def.hasIsActive ? query.get('IsActive') : undefined;
  if (isActive !== undefined) {
    const flag = isActive.toLowerCase();
    if (flag !== 'true' && flag !== 'false') return 'IsActive must be true or false';
    const wanted = flag === 'true';
    checks.push((f) => f.IsActive === wanted);
    parts.push(`active=${flag}`);
  }
  if (def.name === 'customers') {
    for (const field of ['FirstName', 'LastName', 'Email', 'MobilePhone'] as const) {
      const value = query.get(field)?.toLowerCase();
      if (value === undefined) continue;
      checks.push((f) => typeof f[field] === 'string' && f[field].toLowerCase() === value);
      parts.push(`${field}=${value}`);
    }
  }
  if (def.name === 'appointments') {
    const from = query.get('StartDate');
    const to = query.get('EndDate');
    if (from === undefined || to === undefined) return 'StartDate and EndDate are required';
    const fromMs = tenant.clock.parse(from, false);
    if (fromMs === undefined) return 'StartDate is not a valid date';
    const toMs = tenant.clock.parse(to, false);
    if (toMs === undefined) return 'EndDate is not a valid date';
    const [first, last] = [tenant.clock.date(fromMs), tenant.clock.date(toMs)];
    checks.push((f) => {
      const day = typeof f.StartDateTime === 'string' ? f.StartDateTime.slice(0, 10) : '';
      return day >= first && day <= last;
    });
    parts.push(`dates=${first}..${last}`);
  }
  return {
    key: parts.join('&'),
    ...(modifiedFromMs === undefined ? {} : { modifiedFromMs }),
    ...(modifiedToMs === undefined ? {} : { modifiedToMs }),
    ...(checks.length === 0 ? {} : { match: (f: Record<string, unknown>) => checks.every((check) => check(f)) }),
  };
}

function canonicalEvent(name: unknown): EventName | undefined {
  if (typeof name !== 'string') return undefined;
  const lower = name.trim().toLowerCase();
  return EVENT_NAMES.find((event) => event.toLowerCase() === lower);
}

function isWebhookUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function isJsonRequest(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return type !== undefined && /^application\/json\b/i.test(type.trim());
}

async function createWebhook(deps: CoreDeps, { req, res }: CoreRequest, tenant: Tenant): Promise<void> {
  if (!isJsonRequest(req)) return sendMessage(res, 415, 'Content-Type must be application/json');
  const body = await readJson(req);
  if (!body.ok) return sendMessage(res, 400, body.message);
  if (!isRecord(body.value)) return sendMessage(res, 400, 'The body must be a JSON object');
  const eventType = canonicalEvent(body.value.EventName);
  if (eventType === undefined) return sendMessage(res, 400, `EventName must be one of ${EVENT_NAMES.join(', ')}`);
  const webhookUrl = body.value.WebhookUrl;
  if (!isWebhookUrl(webhookUrl)) return sendMessage(res, 400, 'WebhookUrl must be an absolute http or https URL');
  // One registration pairs one event with one URL: registering the pair again returns it.
  let registration = [...tenant.registrations.values()].find((r) => r.EventType === eventType && r.WebhookUrl === webhookUrl);
  if (registration === undefined) {
    registration = { Id: deps.nextWebhookId(), WebhookUrl: webhookUrl, EventType: eventType };
    tenant.registrations.set(registration.Id, registration);
  }
  sendJson(res, 200, { ...registration, id: registration.Id });
}

function listWebhooks({ res, url }: CoreRequest, tenant: Tenant): void {
  const query = new Query(url.searchParams);
  const eventText = query.get('EventType');
  const eventType = eventText === undefined ? undefined : canonicalEvent(eventText);
  if (eventText !== undefined && eventType === undefined) {
    return sendMessage(res, 400, `EventType must be one of ${EVENT_NAMES.join(', ')}`);
  }
  const webhookUrl = query.get('WebhookUrl');
  if (webhookUrl !== undefined && !isWebhookUrl(webhookUrl)) {
    return sendMessage(res, 400, 'WebhookUrl must be an absolute http or https URL');
  }
  const matches = (r: WebhookRegistration): boolean =>
    (eventType === undefined || r.EventType === eventType) && (webhookUrl === undefined || r.WebhookUrl === webhookUrl);
  sendJson(res, 200, tenant.webhookList().filter(matches));
}

function webhookId(text: string): number | undefined {
  return /^[1-9]\d{0,14}$/.test(text) ? Number(text) : undefined;
}

function getWebhook(res: ServerResponse, tenant: Tenant, idText: string): void {
  const id = webhookId(idText);
  if (id === undefined) return sendMessage(res, 400, 'The webhook id must be a positive integer');
  const registration = tenant.registrations.get(id);
  if (registration === undefined) return sendMessage(res, 404, 'No webhook with that id');
  sendJson(res, 200, { ...registration });
}

function deleteWebhook(res: ServerResponse, tenant: Tenant, idText: string): void {
  const id = webhookId(idText);
  if (id === undefined) return sendMessage(res, 400, 'The webhook id must be a positive integer');
  if (!tenant.registrations.delete(id)) return sendMessage(res, 404, 'No webhook with that id');
  sendEmpty(res, 204);
}
