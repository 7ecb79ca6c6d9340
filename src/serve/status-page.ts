/**
 * The status page `serve` answers on GET /: one read-only, server-rendered
 * HTML page (no script, no front-end build) with what an operator checks on
 * day two, rendered from what src/status/page.ts reads. On top, the fleet
 * summary: one line per source, worst first (failing, over budget, behind,
 * ok; src/status/fleet.ts), with the totals. Then quarantined records, the
 * webhook backlog and dead letters, schema-drift warnings. Then the detail of
 * each source shown: requests today against the quota and the budget, the
 * last 14 quota days, when the quota day resets; per stream: rows,
 * freshness, the next check, the latest runs.
 *
 * It shows counts, times and names of sources, streams and fields: never a
 * record (no quarantined record, no error message, which may quote what a
 * server sent), a URL or a credential.
 */
import { UNLIMITED } from '../config/schema.ts';
import type { DayRequests } from '../state/quota.ts';
import type { RecentRun } from '../state/runs.ts';
import { slackText, type SourceStatus } from '../status/detail.ts';
import { describeTotals, span, type FleetSummary, type SourceHealth } from '../status/fleet.ts';
import type { StatusPageData } from '../status/page.ts';

/** The page reloads itself this often (seconds): it is meant to be left open. */
const REFRESH_SECONDS = 60;

export function renderStatusPage(data: StatusPageData): string {
  const now = data.generatedAt;
  const quarantined = data.attention.quarantined;
  const warnings = data.attention.drift.filter((f) => f.kind !== 'unmapped_field');
  const body = [
    `<header><h1>pmsync status</h1><p>As of ${time(now, now)}. Read-only; counts and times only. Reloads every ${REFRESH_SECONDS} s.</p></header>`,
    data.fleet.totals.sources > 0 ? renderFleet(data.fleet, now) : '',
    `<section aria-labelledby="attention"><h2 id="attention">Needs attention</h2><dl class="summary">`,
    item('Quarantined records', num(quarantined), 'quarantined', quarantined > 0),
    data.webhooks ? item('Webhook backlog', num(data.webhooks.ready + data.webhooks.deferred + data.webhooks.retrying), 'backlog') : '',
    data.webhooks ? item('Dead letters', num(data.webhooks.deadLettered), 'dead-letters', data.webhooks.deadLettered > 0) : '',
    item('Schema-drift warnings', num(warnings.length), 'drift-warnings', warnings.length > 0),
    `</dl>`,
    warnings.length
      ? `<ul class="drift" aria-label="Schema-drift warnings">${warnings
          .map((f) => `<li><strong>${esc(f.source)}/${esc(f.table)}</strong> ${esc(f.kind)}: ${esc(f.detail)}</li>`)
          .join('')}</ul>`
      : '',
    `</section>`,
    data.unknownSource ? `<p class="warn">No source named ${esc(data.unknownSource)} is configured.</p>` : '',
    data.linkedDetail && data.sources.length === 0 ? '<p>Choose a source in the summary to see its detail.</p>' : '',
    ...data.sources.map((s) =>
      renderSource(
        s,
        data.fleet.sources.find((h) => h.source === s.status.source),
        now,
      ),
    ),
    data.fleet.totals.sources === 0 ? '<p>No source is configured.</p>' : '',
  ].join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${REFRESH_SECONDS}"><meta name="robots" content="noindex">
<title>pmsync status</title><style>${CSS}</style></head>
<body>${body}</body></html>
`;
}

/** The fleet summary: totals, then one row per source, worst first, each linking to its detail. */
function renderFleet(fleet: FleetSummary, now: Date): string {
  const t = fleet.totals;
  const rows = fleet.sources.map((h) => {
    const href = `?source=${encodeURIComponent(h.source)}#source-${slug(h.source)}`;
    const b = h.budget;
    const q = h.quota;
    return `<tr data-source="${esc(h.source)}" data-verdict="${esc(h.verdict)}">
<th scope="row"><a href="${esc(href)}">${esc(h.source)}</a></th>
<td class="verdict ${slug(h.verdict)}">${esc(h.verdict)}</td>
<td class="stalest">${stalest(h)}</td>
<td class="budget">${num(b.used)} of ${b.budget === null ? 'unlimited' : num(b.budget)}</td>
<td class="quota">${q ? `${num(q.used)} of ${num(q.dailyLimit)}` : 'no quota'}</td>
<td class="next">${h.nextCheck ? (Date.parse(h.nextCheck.at) <= now.getTime() ? 'due now' : time(new Date(h.nextCheck.at), now)) : '-'}</td>
<td class="why">${why(h, now)}</td>
</tr>`;
  });
  return `<section aria-labelledby="fleet"><h2 id="fleet">Sources, worst first</h2>
<p class="totals" aria-label="Totals">${esc(describeTotals(t))}</p>
<table class="fleet" aria-label="Sources, worst first">
<thead><tr><th scope="col">Source</th><th scope="col">Health</th><th scope="col">Stalest stream</th><th scope="col">Budget today</th><th scope="col">Requests today</th><th scope="col">Next check</th><th scope="col">Why</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
${fleet.omitted > 0 ? `<p>${num(fleet.omitted)} more source(s) not shown.</p>` : ''}
</section>`;
}

function stalest(h: SourceHealth): string {
  const s = h.stalest;
  if (!s) return '-';
  if (s.minutes === null) return `${esc(s.resource)}: first pass`;
  return `${esc(s.resource)}: ${span(s.minutes)}${s.targetMinutes !== null ? ` <small>(target ${span(s.targetMinutes)})</small>` : ''}`;
}

/** The reasons (with error codes), and when the last failure was: never an error message, which may quote what a server sent. */
function why(h: SourceHealth, now: Date): string {
  const parts = h.reasons.map(esc);
  if (h.lastError) parts.push(`<small>last failure ${time(new Date(h.lastError.at), now)}</small>`);
  return parts.join('<br>') || '-';
}

function renderSource(s: StatusPageData['sources'][number], health: SourceHealth | undefined, now: Date): string {
  const st = s.status;
  const id = `source-${slug(st.source)}`;
  const b = st.budget;
  const q = st.quota;
  const planned = b.planned.check + b.planned.webhook + b.planned.full;
  const pinned = health?.pinned;
  const pinnedOver = pinned?.limit && pinned.over > 0 ? pinned.limit : null;
  const pinnedText = pinned
    ? ` (${num(pinned.planned)} by pinned streams${pinnedOver ? `, more than the ${num(pinnedOver.left)} left of the ${pinnedOver.kind}` : ''})`
    : '';
  const facts = [
    q
      ? item('Requests today', `${num(q.used)} of ${num(q.dailyLimit)}`, 'quota', q.used >= q.dailyLimit || q.exhaustedUntil !== null)
      : item('Requests today', `${num(sumSpent(b.spent))} (no quota)`, 'quota'),
    q?.exhaustedUntil ? item('Quota exhausted until', time(new Date(q.exhaustedUntil), now), 'exhausted', true) : '',
    item(
      'Budget spent today',
      `${num(b.used)} of ${b.budget >= UNLIMITED ? 'unlimited' : num(b.budget)} (check ${num(b.spent.check)}, webhook ${num(b.spent.webhook)}, full ${num(b.spent.full)})`,
      'budget',
    ),
    item('Outside the budget today', `backfill ${num(b.spent.backfill)}, resync ${num(b.spent.resync)}`, 'outside-budget'),
    item(
      'Planned for the rest of the day',
      `${num(planned)} requests of the budget${pinnedText}, ${num(b.planned.backfill)} for backfills`,
      'planned',
      pinnedOver !== null,
    ),
    b.exploreWithinMinutes !== null
      ? item('Exploration', `every polled stream checked at least every ${num(b.exploreWithinMinutes)} min of active hours`, 'explore')
      : '',
    b.busyIntervalMinutes !== null
      ? item(
          'Busy hours',
          `polled streams checked at least every ${b.busyIntervalMinutes} min while they change a few times an hour${slackText(b.busySlackHours)}`,
          'interval',
        )
      : '',
    b.workday !== null
      ? item(
          'Working day',
          `hours not known yet: read from its notifications since ${time(new Date(b.workday.since), now)}, expected to close between ${time(new Date(b.workday.closingFrom), now)} and ${time(new Date(b.workday.closingTo), now)}`,
          'workday',
        )
      : '',
    b.atWorkSince !== null
      ? item(
          'Working day',
          `hours not known yet: its checks found it at work since ${time(new Date(b.atWorkSince), now)}${b.atWorkUntil !== null ? `, its rates held until ${time(new Date(b.atWorkUntil), now)} (the longest working day it may have)` : ''}`,
          'at-work',
        )
      : '',
    b.hoursStated !== null
      ? item(
          'Hours',
          b.hoursStated.inUse
            ? `as stated (${esc(b.hoursStated.hours.join(', '))}) until its changes show its own`
            : `as its changes show them; the stated ${esc(b.hoursStated.hours.join(', '))} are no longer used`,
          'hours-stated',
        )
      : '',
    q ? item('Quota day resets', time(new Date(q.resetsAt), now), 'resets') : '',
  ];
  return `<section class="source" aria-labelledby="${id}">
<h2 id="${id}">Source ${esc(st.source)} <small>(${esc(st.kind)})</small></h2>
<dl class="summary">${facts.join('')}</dl>
${bars(st.source, s.days, q?.dailyLimit ?? null, st.budget.budget)}
${streamsTable(st, s.runs, now)}
</section>`;
}

function bars(source: string, days: DayRequests[], quota: number | null, budget: number): string {
  // Scaled to the busiest day or the budget, whichever is higher: the quota (often ten times the budget) would flatten every ordinary day.
  const finiteBudget = budget < 2_147_483_647 ? budget : 0;
  const top = Math.max(1, finiteBudget, ...days.map((d) => d.requests));
  const notes = [quota ? `quota ${num(quota)}` : null, finiteBudget ? `dashed line: budget ${num(finiteBudget)}` : null].filter(Boolean);
  const line = (value: number, cls: string, label: string) =>
    value > 0 && value <= top ? `<span class="line ${cls}" style="bottom:${pct(value, top)}%" title="${label}"></span>` : '';
  return `<figure class="history" aria-label="Requests per quota day of ${esc(source)}, last ${days.length} days">
<figcaption>Requests per quota day, last ${days.length} days${notes.length ? ` (${notes.join(', ')})` : ''}</figcaption>
<ol class="bars">${days
    .map(
      (d) =>
        `<li data-day="${d.day}" aria-label="${d.day}: ${d.requests} requests"><span class="count">${num(d.requests)}</span><span class="bar" style="height:${pct(d.requests, top)}%"></span><span class="day">${d.day.slice(5)}</span></li>`,
    )
    .join('')}${line(quota ?? 0, 'quota-line', `quota ${quota}`)}${line(finiteBudget, 'budget-line', `budget ${budget}`)}</ol>
</figure>`;
}

function streamsTable(st: SourceStatus, runs: Map<string, RecentRun[]>, now: Date): string {
  const rows = st.resources.map((r) => {
    const s = r.schedule;
    const freshness = s?.lastCheckAt ? time(new Date(s.lastCheckAt), now) : r.inWindow ? 'first pass not finished' : 'never read';
    const drift = (r.drift ?? []).filter((f) => f.kind !== 'unmapped_field');
    return `<tr data-stream="${esc(r.resource)}">
<th scope="row">${esc(r.resource)}</th>
<td class="rows">${num(r.rows)}</td>
<td class="freshness">${freshness}${s?.notificationsWaiting ? `<br><small>${num(s.notificationsWaiting)} notified change(s) waiting</small>` : ''}</td>
<td class="next">${nextCheck(s, now)}</td>
<td class="runs"><ol>${(runs.get(r.resource) ?? []).map((run) => renderRun(run, now)).join('') || '<li>none yet</li>'}</ol></td>
<td class="quarantined${r.quarantined > 0 ? ' warn' : ''}">${num(r.quarantined)}</td>
<td class="drift">${drift.length ? drift.map((f) => `<span class="warn">${esc(f.kind)}: ${esc(f.subject)}</span>`).join('<br>') : '-'}</td>
</tr>`;
  });
  return `<table class="streams" aria-label="Streams of ${esc(st.source)}">
<thead><tr><th scope="col">Stream</th><th scope="col">Rows</th><th scope="col">Freshness (last complete read)</th><th scope="col">Next check</th><th scope="col">Last runs</th><th scope="col">Quarantined</th><th scope="col">Drift</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}

function nextCheck(s: SourceStatus['resources'][number]['schedule'], now: Date): string {
  if (!s) return '-';
  if (s.runningIn) return `running now in ${esc(s.runningIn)}`;
  if (s.mode === 'off') return 'off (not scheduled)';
  if (s.mode === 'cron')
    return s.nextFire ? `${time(new Date(s.nextFire), now)}<br><small>pinned to ${esc(s.cron ?? '')}</small>` : 'never';
  if (s.due) return `due now: ${esc(s.due)}`;
  const waiting = s.waiting ? `<br><small>${esc(s.waiting)}</small>` : '';
  if (s.nextCheck) return `about ${time(new Date(s.nextCheck.at), now)} <small>(${esc(s.nextCheck.reason)})</small>${waiting}`;
  return s.waiting ? esc(s.waiting) : '-';
}

function renderRun(run: RecentRun, now: Date): string {
  const seconds = run.endedAt ? Math.max(0, Math.round((run.endedAt.getTime() - run.startedAt.getTime()) / 1000)) : null;
  const what = [
    run.purpose,
    seconds === null ? 'running' : `${seconds} s`,
    `${num(run.requests)} req`,
    `${num(run.written)} rows`,
    run.rejected ? `${num(run.rejected)} rejected` : null,
    run.errorCode,
  ].filter(Boolean);
  return `<li class="run ${esc(run.status)}"><span class="outcome">${esc(run.status)}</span> ${time(run.startedAt, now)} <small>${esc(what.join(', '))}</small></li>`;
}

function item(label: string, value: string, key: string, warn = false): string {
  return `<div class="fact${warn ? ' warn' : ''}" data-fact="${key}"><dt>${esc(label)}</dt><dd>${value}</dd></div>`;
}

/** `<time>` with the instant (UTC) and how long ago or ahead it is. */
function time(at: Date, now: Date): string {
  const iso = at.toISOString();
  const shown = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return `<time datetime="${iso}">${shown}</time> <small>(${relative(at.getTime() - now.getTime())})</small>`;
}

function relative(ms: number): string {
  const minutes = Math.round(Math.abs(ms) / 60_000);
  const span =
    minutes < 1
      ? 'under a minute'
      : minutes < 120
        ? `${minutes} min`
        : minutes < 48 * 60
          ? `${Math.round(minutes / 60)} h`
          : `${Math.round(minutes / 1440)} days`;
  if (minutes < 1) return 'now';
  return ms < 0 ? `${span} ago` : `in ${span}`;
}

const sumSpent = (spent: Record<string, number>) => Object.values(spent).reduce((a, b) => a + b, 0);
const num = (n: number) => n.toLocaleString('en-US');
const pct = (v: number, top: number) => Math.round((1000 * v) / top) / 10;
const slug = (s: string) => s.replace(/[^a-z0-9_-]/gi, '-');

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#f7f8fa}
h1{font-size:1.4rem;margin:0}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}small{color:#5b6473}
header p{margin:.25rem 0 1rem;color:#5b6473}
section.source{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.75rem 1rem;margin-bottom:1.25rem}
dl.summary{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;margin:.25rem 0 .75rem}
.fact dt{font-size:.8rem;color:#5b6473}.fact dd{margin:0;font-weight:600}
.warn,.fact.warn dd{color:#b3261e}
figure.history{margin:.5rem 0 1rem}figcaption{font-size:.85rem;color:#5b6473}
ol.bars{position:relative;display:flex;align-items:flex-end;gap:4px;height:140px;padding:18px 0 18px;margin:0;list-style:none;border-bottom:1px solid #c4cad3}
ol.bars li{position:relative;flex:1;height:100%;display:flex;flex-direction:column;justify-content:flex-end;align-items:center}
ol.bars .bar{display:block;width:100%;background:#3b6fd8;border-radius:2px 2px 0 0;min-height:1px}
ol.bars li:last-of-type .bar{background:#1f4fb4}
ol.bars .count{font-size:.7rem;color:#1d2330}ol.bars .day{position:absolute;bottom:-18px;font-size:.7rem;color:#5b6473}
ol.bars .line{position:absolute;left:0;right:0;border-top:1px dashed #b3261e}ol.bars .budget-line{border-color:#7a5af5}
table.streams,table.fleet{border-collapse:collapse;width:100%;font-size:.9rem}
table.streams th,table.streams td,table.fleet th,table.fleet td{border-top:1px solid #e3e6eb;padding:.35rem .5rem;text-align:left;vertical-align:top}
table.fleet{background:#fff}p.totals{font-weight:600;margin:.25rem 0 .75rem}
td.verdict{font-weight:600}td.failing,td.over-budget{color:#b3261e}td.behind{color:#8a5a00}td.ok{color:#1e7b34}
table.streams td.rows,table.streams td.quarantined{text-align:right;font-variant-numeric:tabular-nums}
td.runs ol{margin:0;padding:0;list-style:none}
.run .outcome{display:inline-block;min-width:6.5em;font-weight:600}
.run.succeeded .outcome{color:#1e7b34}.run.failed .outcome,.run.quota_exhausted .outcome{color:#b3261e}.run.interrupted .outcome,.run.running .outcome{color:#8a5a00}
ul.drift{margin:.25rem 0 0;padding-left:1.2rem}
`;
