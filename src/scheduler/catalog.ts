/**
 * The streams `serve` schedules for a source, and how each is read. Core and
 * Subset: full-refresh streams (by definition or the source's fullRefresh
 * list) are full passes, the others incremental checks. Pro: the lists and
 * availability captures are read whole every time (full); the per-key
 * fan-outs read only what changed between their own sweeps (incremental; see
 * docs/pro-and-subset.md).
 */
import type { SourceConfig } from '../config/schema.ts';
import type { StreamEntry } from './plan.ts';
import { selectProStreams, selectRestStreams } from '../sync/streams/index.ts';

export function streamCatalog(source: SourceConfig): StreamEntry[] {
  if (source.kind === 'pro')
    return selectProStreams(source).map((s) => ({ resource: s.resource, kind: s.kind === 'pro-fan-out' ? 'incremental' : 'full' }));
  return selectRestStreams(source).map((s) => ({
    resource: s.resource,
    kind: s.mode === 'full' || source.fullRefresh.includes(s.resource) ? 'full' : 'incremental',
  }));
}
