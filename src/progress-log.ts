/**
 * Progress lines for logs nobody watches live (cron mail, `docker logs`, a
 * file): while a stream's run goes on, one info line per stream at a steady
 * interval, with where it stands (page x of y, rows, requests), the quota
 * left and an estimate of the time to go. On a terminal the CLI draws a bar
 * instead (src/cli/progress.ts).
 */
import type { Logger } from './log.ts';
import type { ProgressEvent } from './sync/context.ts';

export interface ProgressLine {
  source: string;
  resource: string;
  page: number;
  totalPages: number | null;
  rows: number;
  requests: number;
  /** Requests left on the quota day; null when the source has no quota (Pro) or it could not be read. */
  quotaLeft: number | null;
  /** Seconds to the window's last page at the pace seen so far; null when unknown. */
  etaSeconds: number | null;
}

interface Tracked {
  source: string;
  resource: string;
  page: number;
  totalPages: number | null;
  rows: number;
  requests: number;
  /** Pages read and when, at the first event this reporter saw: the pace is measured from there. */
  basePage: number;
  baseAt: number;
  lastAt: number;
}

export interface ProgressLogDeps {
  logger: Logger;
  /** Requests left on the source's quota day, or null. */
  quotaLeft(source: string): Promise<number | null>;
  /** Milliseconds, for the pace (injected in tests). */
  clock?: () => number;
}

export class ProgressLog {
  private readonly deps: ProgressLogDeps;
  private readonly clock: () => number;
  private readonly streams = new Map<string, Tracked>();

  constructor(deps: ProgressLogDeps) {
    this.deps = deps;
    this.clock = deps.clock ?? (() => performance.now());
  }

  observe(e: ProgressEvent): void {
    const key = `${e.source}/${e.resource}`;
    const now = this.clock();
    const t = this.streams.get(key);
    if (!t) {
      // The pace is counted from the first page seen, not from the run's start (a resumed window may begin at page 800).
      this.streams.set(key, {
        source: e.source,
        resource: e.resource,
        page: e.page,
        totalPages: e.totalPages,
        rows: e.rows,
        requests: e.requests ?? 0,
        basePage: e.page,
        baseAt: now,
        lastAt: now,
      });
      return;
    }
    t.page = e.page;
    t.totalPages = e.totalPages ?? t.totalPages;
    t.rows += e.rows;
    t.requests = e.requests ?? t.requests;
    t.lastAt = now;
  }

  end(stream: { source: string; resource: string }): void {
    this.streams.delete(`${stream.source}/${stream.resource}`);
  }

  /** Where every running stream stands now. */
  async lines(): Promise<ProgressLine[]> {
    const now = this.clock();
    const out: ProgressLine[] = [];
    for (const t of this.streams.values()) {
      out.push({
        source: t.source,
        resource: t.resource,
        page: t.page,
        totalPages: t.totalPages,
        rows: t.rows,
        requests: t.requests,
        quotaLeft: await this.deps.quotaLeft(t.source).catch(() => null),
        etaSeconds: eta(t, now),
      });
    }
    return out;
  }

  /** Logs one line per running stream. */
  async report(): Promise<void> {
    for (const line of await this.lines()) this.deps.logger.info(line, describeProgress(line));
  }

  /** Reports every `seconds` until the returned function is called. */
  every(seconds: number): () => void {
    let busy = false;
    const timer = setInterval(() => {
      if (busy || this.streams.size === 0) return;
      busy = true;
      void this.report().finally(() => (busy = false));
    }, seconds * 1000);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** Pages left at the pace since the first page seen; unknown until two pages were read or when no total is known. */
function eta(t: Tracked, now: number): number | null {
  if (t.totalPages === null) return null;
  const done = t.page - t.basePage;
  const elapsed = (t.lastAt - t.baseAt) / 1000;
  if (done <= 0 || elapsed <= 0) return null;
  const left = Math.max(0, t.totalPages - t.page);
  // Time already spent on the page in flight counts against the estimate.
  const sinceLast = (now - t.lastAt) / 1000;
  return Math.max(0, Math.round((left * elapsed) / done - sinceLast));
}

/** `customers: page 120 of 2000, 12000 rows, 121 requests, 879 left of the quota, about 16 min to go`. */
export function describeProgress(l: ProgressLine): string {
  const parts = [
    `page ${l.page} of ${l.totalPages ?? '?'}`,
    `${l.rows} rows`,
    `${l.requests} request(s)`,
    l.quotaLeft === null ? null : `${l.quotaLeft} left of the quota today`,
    l.etaSeconds === null ? null : l.etaSeconds < 1 ? 'nearly done' : `about ${duration(l.etaSeconds)} to go`,
  ];
  return `${l.resource}: ${parts.filter(Boolean).join(', ')}`;
}

export function duration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  const h = Math.floor(seconds / 3600);
  const m = Math.round((seconds % 3600) / 60);
  return m === 0 ? `${h} h` : `${h} h ${m} min`;
}
