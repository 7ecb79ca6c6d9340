/** What `pmsync runs` lists: the latest runs from pmsync.runs, newest first, narrowed as asked. */
import type { App } from '../app.ts';
import { listRuns, type ListedRun } from '../state/runs.ts';
import { resourceOfTable } from '../sync/streams/index.ts';

export interface RunsQuery {
  limit: number;
  source?: string;
  /** A resource, or the table it writes. */
  resource?: string;
  status?: string;
}

export function readRuns(app: App, query: RunsQuery): Promise<ListedRun[]> {
  return listRuns(app.pool, {
    limit: query.limit,
    source: query.source,
    resource: query.resource ? resourceOfTable(query.resource) : undefined,
    status: query.status,
  });
}
