/**
 * Reads limited to some streams of their sources: the scheduler reads again
 * only the streams whose rows changed (src/scheduler/observe.ts,
 * readSourcesAgain), with the same queries that read whole sources.
 */

/** Streams, each a source and one of its resources. */
export type StreamPairs = ReadonlyArray<{ source: string; resource: string }>;

/**
 * A condition keeping the rows (by their source and resource columns) of
 * `only`, to follow a WHERE clause, with its parameters numbered from
 * `first`; nothing when `only` is not given (every stream of the sources).
 */
export function onlyStreams(
  only: StreamPairs | undefined,
  source: string,
  resource: string,
  first: number,
): { sql: string; params: unknown[] } {
  if (!only) return { sql: '', params: [] };
  return {
    sql: ` AND (${source}, ${resource}) IN (SELECT * FROM unnest($${first}::text[], $${first + 1}::text[]))`,
    params: [only.map((s) => s.source), only.map((s) => s.resource)],
  };
}
