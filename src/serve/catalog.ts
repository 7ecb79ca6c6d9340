/**
 * The streams `serve` schedules for a source, and which schedule each takes:
 * full-refresh streams (by definition or the source's fullRefresh list) the
 * `full` one, the others the `incremental` one.
 */
import type { SourceConfig } from '../config.ts';
import type { StreamEntry } from '../scheduler/plan.ts';
import { selectRestStreams } from '../sync/streams/index.ts';

export function streamCatalog(source: SourceConfig): StreamEntry[] {
  if (source.kind === 'pro') return [];
  return selectRestStreams(source).map((s) => ({ resource: s.resource, mode: s.mode === 'full' || source.fullRefresh.includes(s.resource) ? 'full' : 'incremental' }));
}
