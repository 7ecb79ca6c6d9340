import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Tenant } from './core/tenant.ts';
import { isRecord, parseInteger, readJson, sendJson } from './http.ts';
import type { Faults, SimulatorStats } from './types.ts';
import { isCoreResource } from './types.ts';

// /__sim/: a loopback-only control API so a demo or benchmark in another
// process can change data, set faults and read stats.

export interface ControlDeps {
  readonly tenants: ReadonlyMap<string, Tenant>;
  stats(): SimulatorStats;
  setFaults(faults: Faults): void;
}

const DEFAULT_STATS_REQUESTS = 1000;
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function fail(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { message });
}

export async function serveControl(deps: ControlDeps, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (!LOOPBACK.has(req.socket.remoteAddress ?? '')) return fail(res, 403, 'The control API answers loopback clients only');
  const action = url.pathname.slice('/__sim/'.length);
  const method = req.method ?? 'GET';

  if (action === 'health' && method === 'GET') return sendJson(res, 200, { ok: true });
  if (action === 'stats' && method === 'GET') {
    const limitText = url.searchParams.get('requests');
    const limit = limitText === null ? DEFAULT_STATS_REQUESTS : parseInteger(limitText, 0);
    if (limit === undefined) return fail(res, 400, 'requests must be a non-negative integer');
    const stats = deps.stats();
    return sendJson(res, 200, { ...stats, requests: limit === 0 ? [] : stats.requests.slice(-limit) });
  }
  if (method !== 'POST' || !['touch', 'create', 'faults'].includes(action)) return fail(res, 404, 'No such control action');

  const body = await readJson(req);
  if (!body.ok) return fail(res, 400, body.message);
  if (!isRecord(body.value)) return fail(res, 400, 'The body must be a JSON object');
  if (action === 'faults') {
    try {
      deps.setFaults(body.value as Faults);
    } catch (err) {
      return fail(res, 400, (err as Error).message);
    }
    return sendJson(res, 200, { ok: true });
  }
  const { apikey, resource, count } = body.value;
  const tenant = typeof apikey === 'string' ? deps.tenants.get(apikey) : undefined;
  if (tenant === undefined) return fail(res, 404, 'No tenant with that apikey');
  if (typeof resource !== 'string' || !isCoreResource(resource) || !tenant.resources.includes(resource)) {
    return fail(res, 400, 'resource must be a resource of that tenant');
  }
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) return fail(res, 400, 'count must be a non-negative integer');
  const handle = tenant.handle();
  const idField = tenant.store(resource)?.def.idField ?? '';
  const records = action === 'touch' ? handle.touch(resource, count) : Array.from({ length: count }, () => handle.create(resource));
  sendJson(res, 200, { count: records.length, ids: records.map((r) => r[idField]) });
}
