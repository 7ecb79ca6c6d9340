/**
 * The streams `serve` schedules for a source, and which schedule each takes.
 * Core and Subset: full-refresh streams (by definition or the source's
 * fullRefresh list) the `full` one, the others the `incremental` one. Pro
 * streams all take `incremental`: they are built to run that often (whole
 * lists are short, the appointment fan-out reads only changed patients between
 * its own daily sweeps, availability keeps its own minimum interval; see
 * docs/pro-and-subset.md), in registry order, since fan-outs read the keys the
 * lists before them stored.
 */
import type { SourceConfig } from '../config.ts';
import type { StreamEntry } from '../scheduler/plan.ts';
import { selectProStreams, selectRestStreams } from '../sync/streams/index.ts';

export function streamCatalog(source: SourceConfig): StreamEntry[] {
  if (source.kind === 'pro') return selectProStreams(source).map((s) => ({ resource: s.resource, mode: 'incremental' }));
  return selectRestStreams(source).map((s) => ({
    resource: s.resource,
    mode: s.mode === 'full' || source.fullRefresh.includes(s.resource) ? 'full' : 'incremental',
  }));
}
