/**
 * What a run needs from the world, built once in the entry point and passed in.
 */
import type { Pool } from '../db/pool.ts';
import type { HttpClient } from '../api/http.ts';
import type { Logger } from '../log.ts';
import type { SourceConfig } from '../config.ts';

export interface ProgressEvent {
  source: string;
  resource: string;
  page: number;
  totalPages: number | null;
  rows: number;
}

export interface SyncContext {
  pool: Pool;
  logger: Logger;
  now: () => Date;
  /** Aborted on SIGTERM/SIGINT: runs stop at the next page boundary. */
  signal: AbortSignal;
  clientFor(source: SourceConfig): HttpClient;
  onProgress?: (event: ProgressEvent) => void;
}
