/**
 * What `status` says when no source is configured: what the database holds
 * (the demo's source, or sources of another configuration) and what to do
 * next, instead of an empty report.
 */
import type { StoredSource } from '../state/sources.ts';

/** The source name `npm run demo` (scripts/demo.ts) writes its rows under. */
export const DEMO_SOURCE = 'demo';

export const CONFIGURE_HINT =
  'To sync an account of your own, set CORE_BASE_URL, CORE_APIKEY, CORE_USERNAME and CORE_PASSWORD, or pass --config FILE ' +
  '(or PMSYNC_CONFIG) with a "sources" list; see "Pointing pmsync at a real account" in the README.';

export function describeNoSources(stored: StoredSource[], options: { demoSource: string; psqlUrl: string | null }): string {
  const lines = ['No source is configured, so there is nothing to report on.'];
  if (stored.length === 0) {
    lines.push('The database holds no synced data yet. "npm run demo" shows pmsync at work against its local simulator.');
  } else {
    lines.push('The database holds data of:');
    for (const s of stored) {
      const last = s.lastRunAt ? `, last run ${s.lastRunAt.toISOString()}` : '';
      const note = s.source === options.demoSource ? ' (written by "npm run demo" from its simulator)' : ' (not in this configuration)';
      lines.push(`  source "${s.source}": ${s.streams} stream(s)${last}${note}`);
    }
    const query = `SELECT source, count(*) FROM customers GROUP BY source`;
    lines.push(`Query it with SQL, e.g. psql ${options.psqlUrl ?? '"$DATABASE_URL"'} -c "${query}"`);
    if (stored.some((s) => s.source !== options.demoSource)) {
      lines.push(
        'To report on a source that is not in this configuration, run status with the configuration that names it (--config FILE).',
      );
    }
  }
  lines.push(CONFIGURE_HINT);
  return `${lines.join('\n')}\n`;
}
