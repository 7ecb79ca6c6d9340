/**
 * Pro paging by Page and Limit over `{ data: [...] }` bodies, guarded against
 * the two things the spec leaves open:
 *
 * - The maximum Limit is not shown. A server that serves fewer rows than the
 *   Limit asked for would make "a short page is the last page" stop early and
 *   silently drop the rest of the list. PageSizes remembers the largest page
 *   the server has served (it serves at least that many per page): a short
 *   page smaller than that is surely the last; a short page at least that
 *   large could be a capped page, so the next page is read to find out. If
 *   that page has records, the server caps Limit at the short page's size:
 *   paging goes on with that size and a warning names it.
 * - Lists whose query the spec shows as "none" (event types, waitlist slots)
 *   may ignore Page. A page repeating the previous page's records ends the
 *   list instead of looping forever.
 *
 * One PageSizes is shared by every list of a source in a run, so once any list
 * has served a full page, no list pays for a check again.
 */
import type { FetchedPage, Page } from './pager.ts';
import { PmsyncError } from '../errors.ts';

export type PageVerdict = 'more' | 'last' | 'check';

export class PageSizes {
  readonly limit: number;
  /** The largest page served so far: the server serves at least this many per page. */
  private served = 0;
  /** The page size the server was found to cap Limit at, when lower than Limit. */
  cappedAt: number | null = null;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** True once a full page settled that short pages are last pages. */
  get settled(): boolean {
    return this.served >= this.limit || this.cappedAt !== null;
  }

  /** Whether to read on after a page of `n` records; call before `observe(n)`. */
  verdict(n: number): PageVerdict {
    if (n === 0) return 'last';
    if (n >= this.limit || (this.cappedAt !== null && n >= this.cappedAt)) return 'more';
    if (n < this.served) return 'last';
    return 'check';
  }

  observe(n: number): void {
    this.served = Math.max(this.served, n);
  }

  /** A page after a short page of `n` records had records: the server serves `n` per page. */
  foundCap(n: number): void {
    this.cappedAt = this.cappedAt === null ? n : Math.min(this.cappedAt, n);
  }
}

export interface ProPagerOptions {
  limit: number;
  startPage?: number;
  sizes: PageSizes;
  /** Reads a record's id, to recognise a repeated page. */
  idOf: (raw: unknown) => string | null;
  warn: (message: string, details: Record<string, unknown>) => void;
}

/** The records of a Pro list body: `{ data: [...] }`, or a bare array. */
export function listRecords(body: unknown, page: number): unknown[] {
  if (Array.isArray(body)) return body;
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new PmsyncError('BAD_RESPONSE', `page ${page} had no "data" array`);
  return data;
}

export async function* pageProList(
  fetchPage: (page: number, limit: number) => Promise<FetchedPage>,
  options: ProPagerOptions,
): AsyncGenerator<Page> {
  const { sizes, limit } = options;
  let previous: { ids: Array<string | null>; n: number; verdict: PageVerdict } | null = null;
  for (let page = options.startPage ?? 1; ; page++) {
    const res = await fetchPage(page, limit);
    const records = listRecords(res.body, page);
    const ids = records.map(options.idOf);
    if (previous && records.length > 0) {
      if (sameIds(previous.ids, ids)) {
        options.warn('the server answered the same records for the next page: it ignores Page here, so the list ends', { page });
        yield { page, records: [], sentAt: res.sentAt, totalRows: null, totalPages: null, last: true };
        return;
      }
      if (previous.verdict === 'check') {
        sizes.foundCap(previous.n);
        options.warn(
          `the server serves at most ${previous.n} records per page although Limit=${limit} was asked; set "pageLimit": ${previous.n} for this source`,
          {
            page,
            limit,
            served: previous.n,
          },
        );
      }
    }
    const verdict = sizes.verdict(records.length);
    sizes.observe(records.length);
    const last = verdict === 'last';
    yield { page, records, sentAt: res.sentAt, totalRows: null, totalPages: null, last };
    if (last) return;
    previous = { ids, n: records.length, verdict };
  }
}

function sameIds(a: Array<string | null>, b: Array<string | null>): boolean {
  return a.length === b.length && a.every((id, i) => id !== null && id === b[i]);
}
