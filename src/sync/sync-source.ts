/**
 * Runs the streams of one source, in order. A failed stream does not stop the
 * others, except for failures that doom them all: bad credentials, an exhausted
 * quota, or a shutdown.
 */
import type { SourceConfig } from '../config.ts';
import { PmsyncError } from '../errors.ts';
import type { SyncContext } from './context.ts';
import { runRestStream, type RunOptions, type RunSummary } from './runner.ts';
import { selectRestStreams } from './streams/index.ts';

export interface SourceResult {
  source: string;
  runs: RunSummary[];
  /** The error that ended the source early, if any. */
  fatal?: PmsyncError | Error;
  failures: Array<{ resource: string; error: Error }>;
}

const FATAL_CODES = new Set(['AUTH_FAILED', 'QUOTA_EXHAUSTED', 'SHUTDOWN', 'DB_UNREACHABLE', 'API_UNREACHABLE']);

export async function syncSource(ctx: SyncContext, source: SourceConfig, resources?: string[], options: RunOptions = {}): Promise<SourceResult> {
  const result: SourceResult = { source: source.name, runs: [], failures: [] };
  if (source.kind === 'pro') {
    throw new PmsyncError('USAGE', `source "${source.name}": Pro sources are not supported by this build`);
  }
  const streams = selectRestStreams(source, resources);
  // Incremental streams first: they are cheap and keep analysts' tables fresh even
  // when a large full refresh later runs out of quota.
  const ordered = [...streams.filter((s) => s.mode === 'incremental'), ...streams.filter((s) => s.mode !== 'incremental')];
  for (const stream of ordered) {
    if (ctx.signal.aborted) break;
    try {
      result.runs.push(await runRestStream(ctx, source, stream, options));
    } catch (err) {
      const code = err instanceof PmsyncError ? err.code : undefined;
      if (code && FATAL_CODES.has(code)) {
        result.fatal = err as PmsyncError;
        break;
      }
      result.failures.push({ resource: stream.resource, error: err as Error });
    }
  }
  return result;
}
