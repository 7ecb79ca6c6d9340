/**
 * A practice's opening hours as its operator states them (a source's
 * `hours`, e.g. `["Mon-Fri 08:00-19:00", "Sat 09:00-13:00"]`, in the source's
 * time zone), read into the hour-of-week slots the scheduler's change models
 * use. What the scheduler does with them: src/scheduler/hours.ts.
 */

/** Hours of the week: the change models' slots (src/state/change-model.ts, SLOTS), Sunday 0:00 first. */
const WEEK_HOURS = 168;

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/** Stated hours: the hour-of-week slots (168, Sunday 0:00 first, as slotOf) they touch. */
export interface StatedHours {
  /** 1 where the practice is open for some of the hour. */
  slots: Uint8Array;
  /** How many. */
  open: number;
  /** Each weekday's (Sunday first) earliest opening, minutes after local midnight; -1 when closed all day. */
  opens: Int16Array;
}

/**
 * Parses stated hours: each entry a day or a range of days (Mon, Mon-Fri,
 * Sat-Sun; a list with commas: Mon,Wed,Fri) and a range of times (HH:MM-HH:MM,
 * 24-hour, the end after the start, 24:00 for midnight). Returns the problems,
 * each naming the entry and what to write, when any.
 */
export function parseHours(entries: readonly string[]): { hours: StatedHours; problems: string[] } {
  const slots = new Uint8Array(WEEK_HOURS);
  const opens = new Int16Array(7).fill(-1);
  const problems: string[] = [];
  for (const entry of entries) {
    const problem = (what: string) => problems.push(`"${entry}": ${what} (write e.g. "Mon-Fri 08:00-19:00")`);
    const m = /^\s*([A-Za-z,-]+)\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$/.exec(entry);
    if (!m) {
      problem('not days and a range of times');
      continue;
    }
    const days = daysOf(m[1]!);
    if (!days) {
      problem('days are Mon, Tue, Wed, Thu, Fri, Sat, Sun, a range of them (Mon-Fri) or a list (Mon,Wed)');
      continue;
    }
    const from = Number(m[2]) * 60 + Number(m[3]);
    const to = Number(m[4]) * 60 + Number(m[5]);
    if (Number(m[3]) > 59 || Number(m[5]) > 59 || from > 24 * 60 || to > 24 * 60) {
      problem('a time is 00:00 to 24:00');
      continue;
    }
    if (to <= from) {
      problem('the range ends before it starts: a practice open past midnight states each day apart (Fri 18:00-24:00, Sat 00:00-02:00)');
      continue;
    }
    for (const d of days) {
      for (let h = Math.floor(from / 60); h < Math.ceil(to / 60); h++) slots[d * 24 + h] = 1;
      if (opens[d]! < 0 || from < opens[d]!) opens[d] = from;
    }
  }
  let open = 0;
  for (const v of slots) open += v;
  return { hours: { slots, open, opens }, problems };
}

function daysOf(text: string): number[] | null {
  const out = new Set<number>();
  for (const part of text.toLowerCase().split(',')) {
    const [a, b, ...rest] = part.split('-');
    const from = DAYS.indexOf(a as (typeof DAYS)[number]);
    const to = b === undefined ? from : DAYS.indexOf(b as (typeof DAYS)[number]);
    if (from < 0 || to < 0 || rest.length > 0) return null;
    // A range wraps past Saturday: Sat-Mon is Saturday, Sunday and Monday.
    for (let d = from; ; d = (d + 1) % 7) {
      out.add(d);
      if (d === to) break;
    }
  }
  return [...out];
}
