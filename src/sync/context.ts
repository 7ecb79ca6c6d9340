/**
 * What a run needs from the world, built once in the entry point and passed in.
 */
import type { Pool } from '../db/pool.ts';
import type { HttpClient } from '../api/http.ts';
import type { Logger } from '../log.ts';
import type { LockSession } from '../state/locks.ts';
import type { SourceConfig } from '../config/schema.ts';

export interface ProgressEvent {
  source: string;
  resource: string;
  /** Pages read so far in this window. */
  page: number;
  totalPages: number | null;
  /** Records on the page just committed. */
  rows: number;
  /** Requests the run has sent so far. */
  requests?: number;
}

export interface SyncContext {
  pool: Pool;
  logger: Logger;
  now: () => Date;
  /** Aborted on SIGTERM/SIGINT: runs stop at the next page boundary. */
  signal: AbortSignal;
  /** Where `pool` connects, to name the database when it is lost (never printed with its password). */
  databaseUrl?: string;
  clientFor(source: SourceConfig): HttpClient;
  onProgress?: (event: ProgressEvent) => void;
  /** A run of one stream ended, whatever way. */
  onRunEnd?: (stream: { source: string; resource: string }) => void;
  /** The process's lock session (serve): stream locks are held on it rather than on a connection each. */
  locks?: LockSession;
}
