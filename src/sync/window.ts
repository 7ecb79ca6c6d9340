/**
 * Window arithmetic for incremental streams. Pure functions, no clock reads.
 */

export interface WindowBounds {
  /** Null on the first pass: read everything modified up to `end`. */
  start: Date | null;
  end: Date;
}

/**
 * The next window: from the stored cursor minus the overlap, to the run start
 * minus the safety lag. Null when there is nothing to read: the cursor is
 * beyond the end (e.g. set in the future). A cursor exactly at the end still
 * re-reads the overlap, which catches records committed late.
 */
export function nextWindow(cursor: Date | null, runStart: Date, overlapSeconds: number, lagSeconds: number): WindowBounds | null {
  const end = new Date(runStart.getTime() - lagSeconds * 1000);
  if (cursor === null) return { start: null, end };
  if (cursor.getTime() > end.getTime()) return null;
  return { start: new Date(cursor.getTime() - overlapSeconds * 1000), end };
}
