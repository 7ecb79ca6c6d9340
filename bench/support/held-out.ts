/**
 * Held-out days: a scheduler is judged on days it did not learn from. Each
 * day is the history the change model learns from (played at the source
 * before pmsync's first pass) and the scored day, kept apart: the rig seeds
 * the model from `history` only, then plays and scores `scored` only.
 *
 * Staleness of a change counts the changes never read: one still unread at
 * the end of the scored day (local midnight) is stale from its instant until
 * then, in the percentiles, and is also counted on its own.
 */
import {
  burstDay,
  EVENING_DAY,
  planLayers,
  QUIET_DAY,
  REFERENCE_DAY,
  scaledDay,
  type DayChange,
  type DayPattern,
} from '../../simulator/day.ts';
import type { CoreResource } from '../../simulator/index.ts';
import { localMidnight, MINUTE, type TrackedChange } from './day-rig.ts';
import { percentile } from './stats.ts';

export interface HeldOutDay {
  /** Short key for the command line and the JSON. */
  key: string;
  name: string;
  /** The scored day (YYYY-MM-DD) in the rig's zone. */
  date: string;
  /** The days before it, oldest first (null: closed), or 'none' for a practice without history. */
  history: ReadonlyArray<DayPattern | null> | 'none';
  /** The scored day: patterns played together (a usual day and a burst on top of it). */
  scored: readonly DayPattern[];
  /** A burst on a stream the model calls quiet: its time to read is scored on its own. */
  burst?: { resource: CoreResource; hour: number };
}

export const ZONE = 'America/New_York';
/** A Thursday, in the future of the real clock (see bench/support/day-rig.ts). */
export const DATE = '2027-11-18';
/** The Sunday US clocks fall back (01:00-02:00 happens twice): a 25-hour day in ZONE. */
export const FALL_BACK_DATE = '2027-11-07';
export const HISTORY_DAYS = 28;
export const BUSY: readonly CoreResource[] = ['appointments', 'customers', 'orders'];

/** 28 ordinary days before `date`: the reference pattern, Sundays closed unless `sundays`. */
export function ordinaryHistory(date: string, sundays = false): Array<DayPattern | null> {
  const start = localMidnight(date, ZONE);
  const out: Array<DayPattern | null> = [];
  for (let d = HISTORY_DAYS; d >= 1; d--) {
    const weekday = new Date(start - d * 86_400_000 + 12 * 3_600_000).getUTCDay();
    out.push(weekday === 0 && !sundays ? null : REFERENCE_DAY);
  }
  return out;
}

export const HELD_OUT_DAYS: readonly HeldOutDay[] = [
  { key: 'reference', name: 'reference day (control)', date: DATE, history: ordinaryHistory(DATE), scored: [REFERENCE_DAY] },
  { key: 'evening', name: 'changes at 18:00-21:00 instead of 8-19', date: DATE, history: ordinaryHistory(DATE), scored: [EVENING_DAY] },
  { key: 'no-changes', name: 'a busy weekday with no changes', date: DATE, history: ordinaryHistory(DATE), scored: [QUIET_DAY] },
  {
    key: 'surge-3x',
    name: '3x the usual changes (learned 1x)',
    date: DATE,
    history: ordinaryHistory(DATE),
    scored: [scaledDay(REFERENCE_DAY, 3)],
  },
  {
    key: 'surge-5x',
    name: '5x the usual changes (learned 1x)',
    date: DATE,
    history: ordinaryHistory(DATE),
    scored: [scaledDay(REFERENCE_DAY, 5)],
  },
  {
    key: 'products-burst',
    name: '30 product changes at 14:00-15:00',
    date: DATE,
    history: ordinaryHistory(DATE),
    scored: [REFERENCE_DAY, burstDay('products', 30, 14)],
    burst: { resource: 'products', hour: 14 },
  },
  {
    key: 'employees-burst',
    name: '20 employee changes at 11:00-12:00',
    date: DATE,
    history: ordinaryHistory(DATE),
    scored: [REFERENCE_DAY, burstDay('employees', 20, 11)],
    burst: { resource: 'employees', hour: 11 },
  },
  {
    key: 'dst',
    name: `clocks fall back (${FALL_BACK_DATE}, 25 h), a practice open daily`,
    date: FALL_BACK_DATE,
    history: ordinaryHistory(FALL_BACK_DATE, true),
    scored: [REFERENCE_DAY],
  },
  { key: 'new-practice', name: 'a new practice, no history', date: DATE, history: 'none', scored: [REFERENCE_DAY] },
  {
    key: 'new-evening',
    name: 'a new practice, no history, whose changes come at 18:00-21:00',
    date: DATE,
    history: 'none',
    scored: [EVENING_DAY],
  },
  {
    key: 'evening-4th',
    name: 'the fourth evening day in a row (18:00-21:00), after 25 ordinary days',
    date: DATE,
    history: movedHistory(DATE, 3, EVENING_DAY),
    scored: [EVENING_DAY],
  },
];

/** 28 days before `date`: ordinary ones, then the last `moved` of them (Sundays aside) played as `pattern`. */
export function movedHistory(date: string, moved: number, pattern: DayPattern): Array<DayPattern | null> {
  const out = ordinaryHistory(date);
  let left = moved;
  for (let i = out.length - 1; i >= 0 && left > 0; i--) {
    if (out[i] === null) continue;
    out[i] = pattern;
    left--;
  }
  return out;
}

export function scoredChanges(day: HeldOutDay, seed: number): DayChange[] {
  return planLayers(day.scored, day.date, ZONE, seed);
}

export interface Staleness {
  changes: number;
  /** Changes not read by the end of the day. */
  unread: number;
  p50: number;
  p95: number;
  max: number;
}

/** Minutes from each change to its row written, or to `dayEnd` for a change never read. */
export function stalenessWithUnread(changes: readonly TrackedChange[], dayEnd: number, filter: (c: TrackedChange) => boolean): Staleness {
  const picked = changes.filter(filter);
  const minutes = picked.map((c) => ((c.visibleAt ?? dayEnd) - c.at) / MINUTE);
  return {
    changes: picked.length,
    unread: picked.filter((c) => c.visibleAt === null).length,
    p50: percentile(minutes, 50),
    p95: percentile(minutes, 95),
    max: percentile(minutes, 100),
  };
}
