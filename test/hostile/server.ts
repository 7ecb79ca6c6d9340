/**
 * A Core API that misbehaves on purpose. The simulator (simulator/) is the
 * faithful API; this is its opposite, small enough to read at a glance: one
 * mode per way a server can hurt a sync, each serving the customers list (and
 * /status) that way. It counts every request, so tests can assert what a
 * defect cost.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type HostileMode =
  /** Faithful paging with consistent Data* headers. */
  | { kind: 'ok' }
  /** Faithful paging, but the records at the given positions carry a NUL and an unpaired surrogate in text fields. */
  | { kind: 'bad-text'; at: number[] }
  /** DataTotalPages far beyond what DataTotalRows and the page size make. */
  | { kind: 'huge-total-pages'; totalPages: string }
  /** Totals that are not safe integers: they round in floating point. */
  | { kind: 'unsafe-totals'; value: string }
  /** Page ignored and no Data* headers: page 1 every time. */
  | { kind: 'ignores-page' }
  /** Page ignored, with consistent Data* headers: page 1 every time. */
  | { kind: 'ignores-page-with-headers' }
  /** Consistent headers, but every page after 1 comes back empty. */
  | { kind: 'empty-pages' }
  /** Headers at once, then the body one byte every `intervalMs`, never finishing. */
  | { kind: 'trickle'; intervalMs: number }
  /** A 200 body of `bytes` bytes, chunked (no Content-Length unless `declare`). */
  | { kind: 'huge-body'; bytes: number; declare?: boolean }
  /** Every request answered with this status and body. */
  | { kind: 'error'; status: number; body: string };

export interface HostileRequest {
  path: string;
  page: number | null;
  rows: number | null;
}

export interface HostileServer {
  url: string;
  /** Core base URL (…/api/v1). */
  baseUrl: string;
  mode: HostileMode;
  /** Total customers in the list. */
  total: number;
  requests: HostileRequest[];
  /** Requests to one path since the last reset. */
  count(path?: string): number;
  /** Spaces a trickling body has written since the last set(). */
  trickled: number;
  /** Called before each answer; a test may cut a connection here. */
  beforeAnswer: (request: HostileRequest) => void | Promise<void>;
  set(mode: HostileMode, total?: number): void;
  close(): Promise<void>;
}

/** A customer record that passes the customers schema. */
export function customer(i: number): Record<string, unknown> {
  return {
    CustomerId: `cust-${String(i).padStart(5, '0')}`,
    CompanyId: 'co-1',
    FirstName: `First${i}`,
    LastName: `Last${i}`,
    Email: `c${i}@example.com`,
    MobilePhone: null,
    IsActive: true,
    Birthday: null,
    LastVisit: null,
    ModifiedOn: '2026-01-05T10:00:00',
  };
}

function page(records: Array<Record<string, unknown>>, pageNo: number, rows: number): Array<Record<string, unknown>> {
  return records.slice((pageNo - 1) * rows, pageNo * rows);
}

function headersFor(total: number, rows: number, pageNo: number): Record<string, string> {
  const pages = Math.ceil(total / rows);
  return {
    DataTotalRows: String(total),
    DataTotalPages: String(pages),
    DataCurrentPage: String(pageNo),
    DataNextPage: String(Math.min(pageNo + 1, Math.max(pages, 1))),
    DataPriorPage: String(Math.max(pageNo - 1, 1)),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Exactly `bytes` bytes of a JSON array of spaces, written as the client reads them. */
async function writeHuge(res: ServerResponse, bytes: number): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  res.write('[');
  for (let left = bytes - 2; left > 0 && !res.destroyed; left -= chunk.length) {
    if (!res.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) {
      await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
  }
  if (!res.destroyed) res.end(']');
}

export async function startHostileServer(mode: HostileMode = { kind: 'ok' }, total = 250): Promise<HostileServer> {
  const timers = new Set<NodeJS.Timeout>();
  const state: HostileServer = {
    url: '',
    baseUrl: '',
    mode,
    total,
    requests: [],
    trickled: 0,
    count: (path) => state.requests.filter((r) => path === undefined || r.path === path).length,
    beforeAnswer: () => undefined,
    set(next, nextTotal) {
      state.mode = next;
      if (nextTotal !== undefined) state.total = nextTotal;
      state.requests = [];
      state.trickled = 0;
    },
    close: async () => {
      for (const t of timers) clearInterval(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/^\/api\/v1/, '');
    const num = (name: string) => (url.searchParams.has(name) ? Number(url.searchParams.get(name)) : null);
    const request: HostileRequest = { path, page: num('Page'), rows: num('Rows') };
    state.requests.push(request);
    await state.beforeAnswer(request);
    const m = state.mode;
    if (m.kind === 'error') {
      res.writeHead(m.status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(m.body) });
      res.end(m.body);
      return;
    }
    if (path === '/status') return json(res, 200, { status: 'ok' });
    if (path !== '/customers') return json(res, 404, { Message: 'No such resource' });

    const pageNo = request.page ?? 1;
    const rows = Math.min(request.rows ?? 20, 100);
    const records = Array.from({ length: state.total }, (_, i) => customer(i + 1));
    switch (m.kind) {
      case 'ok':
        return json(res, 200, page(records, pageNo, rows), headersFor(state.total, rows, pageNo));
      case 'bad-text':
        for (const i of m.at) Object.assign(records[i]!, { FirstName: `Ann\u0000e ${i}`, LastName: `\ud800 ${i}` });
        return json(res, 200, page(records, pageNo, rows), headersFor(state.total, rows, pageNo));
      case 'huge-total-pages':
        return json(res, 200, page(records, pageNo, rows), { ...headersFor(state.total, rows, pageNo), DataTotalPages: m.totalPages });
      case 'unsafe-totals':
        return json(res, 200, page(records, pageNo, rows), {
          ...headersFor(state.total, rows, pageNo),
          DataTotalRows: m.value,
          DataTotalPages: m.value,
        });
      case 'ignores-page':
        return json(res, 200, page(records, 1, rows));
      case 'ignores-page-with-headers':
        return json(res, 200, page(records, 1, rows), headersFor(state.total, rows, 1));
      case 'empty-pages':
        return json(res, 200, pageNo === 1 ? page(records, 1, rows) : [], headersFor(state.total, rows, pageNo));
      case 'trickle': {
        res.writeHead(200, { 'content-type': 'application/json', ...headersFor(state.total, rows, pageNo) });
        res.write('[');
        const timer = setInterval(() => {
          res.write(' ');
          state.trickled += 1;
        }, m.intervalMs);
        timers.add(timer);
        res.once('close', () => {
          clearInterval(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'huge-body':
        res.writeHead(200, { 'content-type': 'application/json', ...(m.declare ? { 'content-length': String(m.bytes) } : {}) });
        return writeHuge(res, m.bytes);
    }
  }

  const server: Server = createServer((req, res) => {
    answer(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.baseUrl = `${state.url}/api/v1`;
  return state;
}
