/**
 * Pagers are async generators over pages. They are handed the call that
 * fetches one page, so they know nothing of HTTP, auth or quotas.
 */
import { PmsyncError } from '../errors.ts';
import { MAX_ROWS } from '../config.ts';

export interface FetchedPage {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  sentAt: Date;
}

export interface Page {
  /** 1-based page number that was requested. */
  page: number;
  records: unknown[];
  sentAt: Date;
  /** From Data* headers when the server sent them. */
  totalRows: number | null;
  totalPages: number | null;
  /** Whether the pager will request another page after this one. */
  last: boolean;
}

function header(headers: FetchedPage['headers'], name: string): number | null {
  const raw = headers[name.toLowerCase()];
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (v === undefined || v.trim() === '' || !/^\d+$/.test(v.trim())) return null;
  return Number(v);
}

/**
 * Core and Subset paging by Page and Rows over bare JSON array bodies.
 *
 * With Data* headers the pager stops when DataCurrentPage reaches
 * DataTotalPages (DataNextPage is clamped to the last page, so it is never a
 * stop signal). Without them it stops at the first page shorter than the rows
 * the server actually serves (Rows above 100 is clamped to 100), or at an
 * empty page.
 */
export async function* pageByRows(fetchPage: (page: number, rows: number) => Promise<FetchedPage>, options: { startPage?: number; rows?: number } = {}): AsyncGenerator<Page> {
  const rows = options.rows ?? MAX_ROWS;
  const served = Math.min(rows, MAX_ROWS);
  for (let page = options.startPage ?? 1; ; page++) {
    const res = await fetchPage(page, rows);
    if (!Array.isArray(res.body)) {
      throw new PmsyncError('BAD_RESPONSE', `page ${page} of the list was not a JSON array (got ${res.body === null ? 'null' : typeof res.body})`);
    }
    const records = res.body as unknown[];
    const totalRows = header(res.headers, 'DataTotalRows');
    const totalPages = header(res.headers, 'DataTotalPages');
    const currentPage = header(res.headers, 'DataCurrentPage') ?? page;
    const last = records.length === 0 || (totalPages !== null ? currentPage >= totalPages : records.length < served);
    yield { page, records, sentAt: res.sentAt, totalRows, totalPages, last };
    if (last) return;
  }
}

/**
 * Pro paging by Page and Limit over `{ data: [...] }` bodies: stops at a page
 * shorter than the Limit asked for, or an empty page.
 */
export async function* pageByLimit(fetchPage: (page: number, limit: number) => Promise<FetchedPage>, options: { startPage?: number; limit: number }): AsyncGenerator<Page> {
  for (let page = options.startPage ?? 1; ; page++) {
    const res = await fetchPage(page, options.limit);
    const data = (res.body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw new PmsyncError('BAD_RESPONSE', `page ${page} had no "data" array`);
    const last = data.length < options.limit;
    yield { page, records: data, sentAt: res.sentAt, totalRows: null, totalPages: null, last };
    if (last) return;
  }
}
