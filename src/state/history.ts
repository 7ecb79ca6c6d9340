/** What the status page shows of the past: requests per quota day, and the latest runs of each stream. */
import type { Queryable } from '../db/pool.ts';

export interface DayRequests {
  /** YYYY-MM-DD label of the quota day. */
  day: string;
  requests: number;
}

/**
 * Requests counted for a gateway key on each of the `days` quota days up to
 * and including `lastDay`, oldest first; days with no request are 0.
 */
export async function requestsPerDay(db: Queryable, keyId: string, lastDay: string, days: number): Promise<DayRequests[]> {
  const res = await db.query<{ day: string; requests: number }>(
    `SELECT to_char(d, 'YYYY-MM-DD') AS day, coalesce(u.used, 0)::int AS requests
     FROM generate_series($2::date - ($3::int - 1), $2::date, interval '1 day') AS d
     LEFT JOIN pmsync.quota_usage u ON u.key_id = $1 AND u.quota_day = d::date
     ORDER BY d`,
    [keyId, lastDay, days],
  );
  return res.rows;
}

export interface RecentRun {
  resource: string;
  status: string;
  purpose: string | null;
  startedAt: Date;
  endedAt: Date | null;
  pages: number;
  requests: number;
  /** Rows inserted or updated. */
  written: number;
  rejected: number;
  /** The error's stable code; its message may quote what a server sent, so it is not read here. */
  errorCode: string | null;
}

/** The latest `perStream` runs of every stream of a source, newest first. */
export async function recentRuns(db: Queryable, source: string, perStream: number): Promise<Map<string, RecentRun[]>> {
  const res = await db.query<{
    resource: string;
    status: string;
    purpose: string | null;
    started_at: Date;
    ended_at: Date | null;
    pages: number;
    requests: number;
    written: number;
    rejected: number;
    error_code: string | null;
  }>(
    `SELECT resource, status, purpose, started_at, ended_at, pages, requests, written, rejected, error_code FROM (
       SELECT resource, status, purpose, started_at, ended_at, pages, requests, inserted + updated AS written, rejected, error_code,
              row_number() OVER (PARTITION BY resource ORDER BY id DESC) AS n
       FROM pmsync.runs WHERE source = $1
     ) r WHERE n <= $2 ORDER BY resource, n`,
    [source, perStream],
  );
  const out = new Map<string, RecentRun[]>();
  for (const r of res.rows) {
    const list = out.get(r.resource) ?? [];
    list.push({
      resource: r.resource,
      status: r.status,
      purpose: r.purpose,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      pages: r.pages,
      requests: r.requests,
      written: r.written,
      rejected: r.rejected,
      errorCode: r.error_code,
    });
    out.set(r.resource, list);
  }
  return out;
}
