/**
 * Pagers are async generators over pages. They are handed the call that
 * fetches one page, so they know nothing of HTTP, auth or quotas.
 */
import { createHash } from 'node:crypto';
import { PmsyncError } from '../errors.ts';

/** Core/Subset maximum page size; larger Rows values are clamped by the server. */
export const MAX_ROWS = 100;

/**
 * The most pages a window may claim: 100 million records at 100 a page, over
 * a thousand quota days on the standard plan. A DataTotalPages above it is not
 * an account but a broken or hostile server, refused before a page is spent on it.
 */
export const MAX_WINDOW_PAGES = 1_000_000;

export interface FetchedPage {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  sentAt: Date;
}

/**
 * Where a Page/Rows pager stands inside one window. It is saved with every
 * page's rows (in the window checkpoint), so a resumed run continues exactly
 * where the last committed page left it.
 */
export interface PagingState {
  /**
   * start: page 1 is next. backward: the server sent Data* headers, so pages
   * are read from the last one down (see pageByRows). forward: no headers.
   */
  order: 'start' | 'forward' | 'backward';
  /** Next page to request. */
  nextPage: number;
  /** Rows the server puts on a full page, learned from page 1. */
  rowsPerPage: number | null;
  /** DataTotalRows of the previous response. */
  lastTotal: number | null;
  /** DataTotalPages of page 1: the window's size, for estimates. */
  totalPages: number | null;
  /** The total changed at least once since page 1 was read, so page 1 is read again at the end. */
  drift: boolean;
  /** Requests answered in this window, repairs included. */
  pagesRead: number;
  /** Pages re-read because the total grew (rows pushed into pages already read). */
  repairs: number;
  /** Growths left unrepaired once the repair budget was spent. */
  unrepaired: number;
  /** The last non-empty page and a hash of its records, to recognise a server answering every Page alike. */
  lastPage?: { page: number; hash: string } | null;
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

/** A page of a Page/Rows list, with the position to save alongside its rows. */
export interface RowsPage extends Page {
  /** DataTotalRows minus the previous response's: rows that entered (+) or left (-) the window meanwhile. */
  totalChange: number;
  state: PagingState;
}

/**
 * A Data* header as a number: null when absent or empty. Anything else that is
 * not a whole number JavaScript holds exactly (a safe integer) is refused: a
 * value such as 99999999999999999999 rounds, and page arithmetic on it never
 * moves (page - 1 is the same number).
 */
function header(headers: FetchedPage['headers'], name: string): number | null {
  const raw = headers[name.toLowerCase()];
  const v = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (v === undefined || v === '') return null;
  const n = /^\d+$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    const shown = v.length > 40 ? `${v.slice(0, 40)}...` : v;
    throw untrusted(`the ${name} header is "${shown}", not a whole number of at most ${Number.MAX_SAFE_INTEGER}`);
  }
  return n;
}

/** The server's paging contradicts itself: stop the window rather than spend requests on pages that cannot exist. */
function untrusted(what: string): PmsyncError {
  return new PmsyncError(
    'BAD_RESPONSE',
    `${what}. The server's paging cannot be trusted, so no further page of this list is requested; pages already stored stay, and the checkpoint stays where it was. Report it to the API provider`,
  );
}

/** Identifies a page's content: a server that ignores Page answers every page with the same records. */
export function pageFingerprint(records: unknown[]): string {
  return createHash('md5').update(JSON.stringify(records)).digest('hex');
}

/**
 * Page 1's headers against each other: DataTotalPages must be what
 * DataTotalRows makes at the page size page 1 shows (a full page when there
 * are more pages). Rows entering or leaving later are handled by `advance`;
 * within one response the two must agree.
 */
function checkTotals(records: number, totalRows: number, totalPages: number): void {
  if (records === 0) {
    if (totalRows > 0) throw untrusted(`page 1 came back empty although its DataTotalRows is ${totalRows}`);
    return;
  }
  const implied = Math.max(1, Math.ceil(totalRows / records));
  if (Math.max(1, totalPages) !== implied) {
    throw untrusted(
      `page 1 says DataTotalPages=${totalPages}, but its DataTotalRows=${totalRows} at the ${records} rows page 1 holds make ${implied} page(s)`,
    );
  }
  if (totalPages > MAX_WINDOW_PAGES)
    throw untrusted(
      `page 1 says DataTotalPages=${totalPages}, more than the ${MAX_WINDOW_PAGES} pages any window is allowed (MAX_WINDOW_PAGES)`,
    );
}

export function initialPaging(nextPage = 1): PagingState {
  return {
    order: nextPage === 1 ? 'start' : 'forward',
    nextPage,
    rowsPerPage: null,
    lastTotal: null,
    totalPages: null,
    drift: false,
    pagesRead: 0,
    repairs: 0,
    unrepaired: 0,
    lastPage: null,
  };
}

/** Pages still to request in the window, when the pager can tell (backward order only). */
export function pagesLeft(state: PagingState): number | null {
  if (state.order !== 'backward') return null;
  return state.nextPage >= 2 ? state.nextPage - 1 + (state.drift ? 1 : 0) : 1;
}

/** Re-reads allowed for growths of the total: a few, plus a tenth of the window. */
function repairBudget(state: PagingState): number {
  return 5 + Math.ceil((state.totalPages ?? 0) / 10);
}

/**
 * One step of the pager: given the state before a page and that page's
 * response, the state after it and whether the window is complete.
 *
 * Why backward: a window's filters are fixed, but its records are not. A
 * record modified while the window is paged leaves it (its ModifiedOn moves
 * past the window's end) and every later row moves one position down. Reading
 * forward, the row that slid from the next page onto the one just read is
 * never seen; the naive pager skips it forever, since its ModifiedOn is old.
 * Reading from the last page down, rows that leave only ever move rows into
 * pages not yet read, so nothing is skipped and the only cost is a duplicate.
 * Page 1 must come first to learn DataTotalPages, so it is read once more at
 * the end when the total changed since (rows may have slid into it).
 *
 * Rows entering a fixed window (DataTotalRows grows) push unread rows up into
 * pages already read; those pages are read again, up to a budget, since a
 * window whose end is in the past should never grow. Changes that cancel out
 * between two responses cannot be seen; without Data* headers nothing can be
 * seen at all (see docs/quota-and-recovery.md). The spec does not say lists
 * keep a stable order; pmsync assumes they do (rows only move as others leave
 * or enter).
 *
 * What a server says is checked before it is acted on: page 1's totals must
 * agree with each other (checkTotals), a page met empty while reading down
 * must be past the end by its own DataTotalRows, and a page whose records are
 * exactly those of the page read before it, while the total did not move,
 * means the server ignores Page. Each stops the window with a clear error.
 * `fingerprint` is pageFingerprint(records).
 */
export function advance(
  state: PagingState,
  page: number,
  records: unknown[],
  totalRows: number | null,
  totalPages: number | null,
  served: number,
  fingerprint: string | null = null,
): { state: PagingState; last: boolean; totalChange: number } {
  const next: PagingState = {
    ...state,
    pagesRead: state.pagesRead + 1,
    lastPage: fingerprint && records.length > 0 ? { page, hash: fingerprint } : null,
  };
  const totalChange = totalRows !== null && state.lastTotal !== null ? totalRows - state.lastTotal : 0;
  if (totalRows !== null) next.lastTotal = totalRows;
  const before = state.lastPage;
  if (fingerprint && records.length > 0 && before && before.page !== page && before.hash === fingerprint && totalChange === 0) {
    throw untrusted(`page ${page} came back with exactly the records of page ${before.page}: the server ignores Page for this list`);
  }

  if (state.order === 'start') {
    if (totalRows === null || totalPages === null) {
      next.order = 'forward';
      return forward(next, page, records, served, totalChange);
    }
    checkTotals(records.length, totalRows, totalPages);
    next.totalPages = totalPages;
    if (records.length === 0 || totalPages <= 1) return { state: next, last: true, totalChange };
    next.order = 'backward';
    next.rowsPerPage = records.length;
    next.nextPage = totalPages;
    return { state: next, last: false, totalChange };
  }

  if (state.order === 'forward') return forward(next, page, records, served, totalChange, totalPages);

  const r = state.rowsPerPage ?? served;
  if (records.length === 0 && totalRows !== null && totalRows > (page - 1) * r) {
    throw untrusted(
      `page ${page} came back empty although its DataTotalRows=${totalRows} at ${r} rows a page puts ${Math.min(r, totalRows - (page - 1) * r)} rows on it`,
    );
  }
  // Everything at positions >= unreadEnd has been read; rows only move down while rows only leave.
  let unreadEnd = (page - 1) * r;
  if (totalRows === null || totalChange !== 0) next.drift = true;
  if (totalRows !== null && totalChange > 0) {
    // Rows entered below: up to totalChange unread rows were pushed past this page into pages read before.
    const pushedTo = Math.min(page * r + totalChange, totalRows);
    if (pushedTo > page * r) {
      const extra = Math.ceil(pushedTo / r) - page + 1;
      if (next.repairs + extra <= repairBudget(state)) {
        next.repairs += extra;
        unreadEnd = pushedTo;
      } else {
        next.unrepaired += totalChange;
      }
    }
  }
  if (unreadEnd <= 0) return { state: next, last: true, totalChange };
  next.nextPage = Math.ceil(unreadEnd / r);
  if (next.nextPage === 1 && !next.drift) return { state: next, last: true, totalChange };
  return { state: next, last: false, totalChange };
}

function forward(
  next: PagingState,
  page: number,
  records: unknown[],
  served: number,
  totalChange: number,
  totalPages: number | null = null,
): { state: PagingState; last: boolean; totalChange: number } {
  // DataNextPage is clamped to the last page, so it is never a stop signal; DataTotalPages is.
  const last = records.length === 0 || (totalPages !== null ? page >= totalPages : records.length < served);
  next.nextPage = page + 1;
  return { state: next, last, totalChange };
}

/**
 * Core and Subset paging by Page and Rows over bare JSON array bodies.
 *
 * With Data* headers: page 1, then the last page down to page 2, then page 1
 * again only if DataTotalRows moved meanwhile (see `advance`). Without them:
 * forward until the first page shorter than the rows the server actually
 * serves (Rows above 100 is clamped to 100), or an empty page.
 */
export async function* pageByRows(
  fetchPage: (page: number, rows: number) => Promise<FetchedPage>,
  options: { state?: PagingState; startPage?: number; rows?: number } = {},
): AsyncGenerator<RowsPage> {
  const rows = options.rows ?? MAX_ROWS;
  const served = Math.min(rows, MAX_ROWS);
  let state = options.state ?? initialPaging(options.startPage ?? 1);
  for (;;) {
    const page = state.nextPage;
    const res = await fetchPage(page, rows);
    if (!Array.isArray(res.body)) {
      throw new PmsyncError(
        'BAD_RESPONSE',
        `page ${page} of the list was not a JSON array (got ${res.body === null ? 'null' : typeof res.body})`,
      );
    }
    const records = res.body as unknown[];
    const totalRows = header(res.headers, 'DataTotalRows');
    const totalPages = header(res.headers, 'DataTotalPages');
    const step = advance(state, page, records, totalRows, totalPages, served, records.length > 0 ? pageFingerprint(records) : null);
    state = step.state;
    yield { page, records, sentAt: res.sentAt, totalRows, totalPages, totalChange: step.totalChange, last: step.last, state };
    if (step.last) return;
  }
}
