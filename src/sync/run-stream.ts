/**
 * Runs one stream of one source: picks the stream's reader and hands it to
 * the driver (driver.ts).
 */
import type { ProSourceConfig, RestSourceConfig } from '../config/schema.ts';
import type { SyncContext } from './context.ts';
import { drive, type Reader } from './driver.ts';
import { captureReader } from './readers/capture.ts';
import { fanOutReader } from './readers/fan-out.ts';
import { newProSession, type ProSession } from './readers/pro-session.ts';
import { proListReader } from './readers/pro-list.ts';
import { restListReader } from './readers/rest-list.ts';
import type { RunOptions, RunSummary } from './run-scope.ts';
import type { ProStream } from './streams/pro/stream.ts';
import type { RestStream } from './streams/rest.ts';

export interface StreamRunOptions extends RunOptions {
  /** Shared by the Pro runs of one source in one sync; a fresh one is made when absent. */
  session?: ProSession;
}

export async function runStream(
  ctx: SyncContext,
  source: RestSourceConfig | ProSourceConfig,
  stream: RestStream | ProStream,
  options: StreamRunOptions = {},
): Promise<RunSummary> {
  return drive(ctx, source, readerFor(ctx, source, stream, options), options);
}

function readerFor(
  ctx: SyncContext,
  source: RestSourceConfig | ProSourceConfig,
  stream: RestStream | ProStream,
  options: StreamRunOptions,
): Reader {
  if (stream.kind === 'rest') {
    if (source.kind === 'pro') throw new Error(`${stream.resource} is a Core/Subset stream, and source "${source.name}" is a Pro source`);
    return restListReader(ctx, source, stream, options);
  }
  if (source.kind !== 'pro') throw new Error(`${stream.resource} is a Pro stream, and source "${source.name}" is a ${source.kind} source`);
  const session = options.session ?? newProSession(source);
  switch (stream.kind) {
    case 'pro-list':
      return proListReader(ctx, source, stream, session);
    case 'pro-fan-out':
      return fanOutReader(ctx, source, stream, options, session);
    case 'pro-snapshot':
      return captureReader(ctx, source, stream, options, session);
  }
}
