import { Command } from 'commander';
import { quotaSettingsFor, type App } from '../../app.ts';
import { pagesLeft } from '../../api/pager.ts';
import type { Config } from '../../config.ts';
import { windowCheckpoint } from '../../state/checkpoints.ts';
import { allowance } from '../../state/quota.ts';
import { describePosition } from '../../sync/pro-scope.ts';
import { checkConnectivity } from '../../sync/source-kinds.ts';
import { resourceTablesFor } from '../../sync/streams/index.ts';
import { configFrom, fail, withApp } from '../shared.ts';
import { describeSchedule, streamScheduleStatus, type StreamScheduleStatus } from '../../scheduler/status.ts';
import { describeRefreshCounts, refreshQueueCounts } from '../../webhooks/queue.ts';

export interface ResourceStatus {
  resource: string;
  table: string;
  rows: number;
  cursor: string | null;
  /** `position` says where a Pro fan-out or capture resumes (its windows have no pages). */
  inWindow: { nextPage: number; end: string; estimate: WindowEstimate | null; position?: string | null } | null;
  lastRun: {
    status: string;
    startedAt: string;
    endedAt: string | null;
    requests: number;
    inserted: number;
    updated: number;
    unchanged: number;
    rejected: number;
    error: string | null;
  } | null;
  quarantined: number;
  /** Its schedule in `pmsync serve` and the process running it now, if any. */
  schedule?: StreamScheduleStatus | null;
}

/**
 * How far a window is and how many quota days it still needs, assuming this
 * stream gets the whole daily sync allowance (other streams share it).
 */
export interface WindowEstimate {
  totalPages: number;
  pagesRead: number;
  pagesLeft: number;
  /** Requests scheduled syncs may send per quota day (the quota minus the reserve). */
  dailyAllowance: number;
  /** Quota days to finish, the current one included when it still has allowance left. */
  quotaDays: number;
}

/** Pure: the estimate for a window, given what is left of today's allowance. */
export function estimateWindow(
  totalPages: number,
  pagesRead: number,
  left: number,
  dailyAllowance: number,
  leftToday: number,
): WindowEstimate {
  const today = Math.max(0, leftToday);
  const later = Math.max(0, left - today);
  const quotaDays = left === 0 ? 0 : (today > 0 ? 1 : 0) + Math.ceil(later / Math.max(1, dailyAllowance));
  return { totalPages, pagesRead, pagesLeft: left, dailyAllowance, quotaDays };
}

export interface SourceStatus {
  source: string;
  kind: string;
  quota: { day: string; used: number; dailyLimit: number; exhaustedUntil: string | null; resetsAt: string } | null;
  resources: ResourceStatus[];
  /** With --check: the answer to one connectivity request. */
  connectivity?: { ok: true; checked: string } | { ok: false; error: string };
}

export async function collectStatus(app: App, config: Config, options: { check?: boolean } = {}): Promise<SourceStatus[]> {
  const out: SourceStatus[] = [];
  const schedules = await streamScheduleStatus(app.pool, config, app.ctx.now());
  for (const source of config.sources) {
    const streams = resourceTablesFor(source);
    const resources: ResourceStatus[] = [];
    const snap = await app.ledgerFor(source).snapshot();
    const dailyAllowance = allowance(quotaSettingsFor(source), 'sync');
    const leftToday = snap.exhaustedUntil ? 0 : dailyAllowance - snap.used;
    for (const s of streams) {
      const [rows, state, run, q] = await Promise.all([
        app.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${s.table.name}" WHERE source = $1`, [source.name]),
        app.pool.query<{ cursor: Date | null; window: unknown }>(
          'SELECT cursor, "window" FROM pmsync.sync_state WHERE source = $1 AND resource = $2',
          [source.name, s.resource],
        ),
        app.pool.query(
          'SELECT status, started_at, ended_at, requests, inserted, updated, unchanged, rejected, error_message FROM pmsync.runs WHERE source = $1 AND resource = $2 ORDER BY id DESC LIMIT 1',
          [source.name, s.resource],
        ),
        app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pmsync.quarantine WHERE source = $1 AND resource = $2', [
          source.name,
          s.resource,
        ]),
      ]);
      const st = state.rows[0];
      const r = run.rows[0];
      const parsed = st?.window ? windowCheckpoint.safeParse(st.window) : null;
      const win = parsed?.success ? parsed.data : null;
      const left = win?.paging ? pagesLeft(win.paging) : null;
      const estimate =
        win?.paging && left !== null && win.paging.totalPages !== null
          ? estimateWindow(win.paging.totalPages, win.paging.pagesRead, left, dailyAllowance, leftToday)
          : null;
      resources.push({
        resource: s.resource,
        table: s.table.name,
        rows: rows.rows[0]?.n ?? 0,
        cursor: st?.cursor?.toISOString() ?? null,
        inWindow: win
          ? { nextPage: win.nextPage, end: win.end, estimate, ...(source.kind === 'pro' ? { position: describePosition(win) } : {}) }
          : null,
        lastRun: r
          ? {
              status: r.status,
              startedAt: r.started_at.toISOString(),
              endedAt: r.ended_at?.toISOString() ?? null,
              requests: r.requests,
              inserted: r.inserted,
              updated: r.updated,
              unchanged: r.unchanged,
              rejected: r.rejected,
              error: r.error_message,
            }
          : null,
        quarantined: q.rows[0]?.n ?? 0,
        schedule: schedules.get(`${source.name}/${s.resource}`) ?? null,
      });
    }
    out.push({
      source: source.name,
      kind: source.kind,
      quota:
        source.kind === 'pro'
          ? null
          : {
              day: snap.day,
              used: snap.used,
              dailyLimit: snap.dailyLimit,
              exhaustedUntil: snap.exhaustedUntil?.toISOString() ?? null,
              resetsAt: snap.resetsAt.toISOString(),
            },
      resources,
      ...(options.check ? { connectivity: await connectivityOf(app, source) } : {}),
    });
  }
  return out;
}

async function connectivityOf(app: App, source: Config['sources'][number]): Promise<NonNullable<SourceStatus['connectivity']>> {
  try {
    const c = await checkConnectivity(app.ctx, source);
    return { ok: true, checked: `GET ${c.checked}` };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

export function printStatus(statuses: SourceStatus[]): void {
  for (const s of statuses) {
    const q = s.quota;
    process.stdout.write(
      `source ${s.source} (${s.kind})` +
        (q
          ? `: ${q.used}/${q.dailyLimit} requests used on quota day ${q.day}, resets ${q.resetsAt}${q.exhaustedUntil ? `, EXHAUSTED until ${q.exhaustedUntil}` : ''}`
          : '') +
        '\n',
    );
    const c = s.connectivity;
    if (c) process.stdout.write(c.ok ? `  connectivity ok (${c.checked})\n` : `  connectivity FAILED: ${c.error}\n`);
    for (const r of s.resources) {
      const run = r.lastRun ? `last run ${r.lastRun.status} at ${r.lastRun.startedAt} (${r.lastRun.requests} req)` : 'never run';
      const e = r.inWindow?.estimate;
      const pos = r.inWindow?.position
        ? `, resumes ${r.inWindow.position}`
        : r.inWindow
          ? `, resumes at page ${r.inWindow.nextPage}` +
            (e
              ? ` (${e.pagesLeft} of ${e.totalPages} pages left, about ${e.quotaDays} quota day(s) at ${e.dailyAllowance} requests a day)`
              : '')
          : '';
      const quarantined = r.quarantined > 0 ? `, ${r.quarantined} quarantined` : '';
      process.stdout.write(
        `  ${r.resource.padEnd(20)} ${String(r.rows).padStart(8)} rows  cursor ${r.cursor ?? '-'}${pos}  ${run}${quarantined}${describeSchedule(r.schedule)}\n`,
      );
    }
  }
}

export function statusCommand(): Command {
  return new Command('status')
    .description('show, per source and resource: cursor, last run, rows, quarantined records and requests used today')
    .option('--json', 'print JSON')
    .option('--check', 'also send each source one connectivity request (Core: GET /status; Subset: one company; Pro: one event type)')
    .action(async (opts: { json?: boolean; check?: boolean }, cmd: Command) => {
      try {
        const config = configFrom(cmd);
        await withApp(config, async (app) => {
          const statuses = await collectStatus(app, config, { check: opts.check });
          if (opts.json) process.stdout.write(`${JSON.stringify(statuses, null, 2)}\n`);
          else {
            printStatus(statuses);
            if (config.sources.some((s) => s.kind === 'core'))
              process.stdout.write(`${describeRefreshCounts(await refreshQueueCounts(app.pool))}\n`);
          }
        });
      } catch (err) {
        fail(err);
      }
    });
}
