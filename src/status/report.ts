/**
 * What `pmsync status` reports, as plain data for its printers: the fleet
 * summary (one verdict per source, worst first) or the per-source detail with
 * each source's verdict; with --check, each source's answer to one
 * connectivity request, which makes a source that did not answer failing.
 */
import pLimit from 'p-limit';
import type { App } from '../app.ts';
import type { Config } from '../config/schema.ts';
import { collectStatus, connectivityOf, type Connectivity, type SourceStatus } from './detail.ts';
import { collectFleet, type FleetSummary, type SourceHealth } from './fleet.ts';

/** Connectivity requests status --check sends at once over a fleet (each to its own source). */
const CHECK_CONCURRENCY = 8;

export interface SummaryReport {
  fleet: FleetSummary;
  /** With --check: every source's answer, by source. */
  checked: Map<string, Connectivity> | null;
}

/** The fleet summary; with `check`, every source is sent its connectivity request first, a few at a time. */
export async function collectSummary(
  app: App,
  config: Config,
  options: { check?: boolean; problems?: boolean; limit?: number },
): Promise<SummaryReport> {
  const checked = options.check ? await checkSources(app, config) : null;
  const fleet = await collectFleet(app, config, {
    problems: options.problems,
    limit: options.limit,
    connectivity: failedOf([...(checked ?? [])]),
  });
  return { fleet, checked };
}

/** The per-source detail, each source with its verdict in the fleet summary as `health`. */
export async function collectDetail(app: App, config: Config, options: { check?: boolean }): Promise<SourceStatus[]> {
  const statuses = await collectStatus(app, config, { check: options.check });
  // Next checks come from the detail just read, not from a second look at every source.
  const fleet = await collectFleet(app, config, {
    connectivity: failedOf(statuses.flatMap((s) => (s.connectivity ? [[s.source, s.connectivity] as const] : []))),
    nextChecks: false,
  });
  for (const s of statuses) {
    const health = fleet.sources.find((h) => h.source === s.source);
    if (health) s.health = { ...health, nextCheck: earliestNextCheck(s) };
  }
  return statuses;
}

/** status --check over every source, a few at a time. */
async function checkSources(app: App, config: Config): Promise<Map<string, Connectivity>> {
  const limit = pLimit(CHECK_CONCURRENCY);
  const answers = await Promise.all(config.sources.map((s) => limit(async () => [s.name, await connectivityOf(app, s)] as const)));
  return new Map(answers);
}

/** The sources whose connectivity request failed, as the fleet summary takes them. */
function failedOf(answers: Array<readonly [string, Connectivity]>): Map<string, { code: string; message: string }> {
  const failed = new Map<string, { code: string; message: string }>();
  for (const [name, c] of answers) if (!c.ok) failed.set(name, { code: c.code, message: c.error });
  return failed;
}

/** The earliest next check of a detailed source, from its streams' schedules. */
function earliestNextCheck(status: SourceStatus): SourceHealth['nextCheck'] {
  let best: SourceHealth['nextCheck'] = null;
  for (const r of status.resources) {
    const next = r.schedule?.nextCheck;
    if (next && (!best || Date.parse(next.at) < Date.parse(best.at))) best = { at: next.at, resource: r.resource, reason: next.reason };
  }
  return best;
}
