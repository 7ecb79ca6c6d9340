/**
 * The budget scheduler over whole days, after 28 ordinary days learned: the
 * tail rule on an ordinary day, and a practice whose hours moved to the
 * evening and stayed, learned within a few days. On the injected clock
 * against the real simulator and PostgreSQL; requests are the simulator's own
 * count. Days unlike the past within one day: held-out.int.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import { DAY, HOUR, MINUTE, stalenessMinutes, type DayRig } from '../../bench/support/day-rig.ts';
import { collectStatus, type SourceStatus } from '../../src/status/detail.ts';
import { fleetTotals } from '../../src/status/fleet.ts';
import { printStatus } from '../../src/cli/commands/status.ts';
import { renderStatusPage } from '../../src/serve/status-page.ts';
import { planDay, REFERENCE_DAY } from '../../simulator/day.ts';
import { slotRatesWithMoved } from '../../src/scheduler/rates.ts';
import { WORKDAY_HOURS } from '../../src/scheduler/observe.ts';
import { loadChangeModels } from '../../src/state/change-model.ts';
import { slotOf } from '../../src/time.ts';
import { DAY_TIMEOUT, EVENING, heldOutRigs, windows, ZONE } from './support/held-out.ts';

const startRig = heldOutRigs();

/** A new practice's reference day (seed 5), with its status as read at noon. */
async function playReferenceDay(r: DayRig): Promise<{ played: Awaited<ReturnType<DayRig['play']>>; noon: SourceStatus | undefined }> {
  let noon: SourceStatus | undefined;
  const played = await r.play(
    planDay(REFERENCE_DAY, r.localDate(r.dayStart + 12 * HOUR), ZONE, 5),
    r.dayStart,
    r.dayStart + DAY,
    async (t) => {
      if (t === r.dayStart + 12 * HOUR) [noon] = await collectStatus(r.app, r.config);
    },
  );
  return { played, noon };
}

/** What `pmsync status` prints and the status page shows of one source's status. */
function statusTexts(status: SourceStatus, at: Date): { cli: string; page: string } {
  const written: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  try {
    printStatus([status], at);
  } finally {
    write.mockRestore();
  }
  const page = renderStatusPage({
    generatedAt: at,
    fleet: { at: at.toISOString(), totals: fleetTotals([]), sources: [], omitted: 0 },
    attention: { quarantined: 0, drift: [] },
    sources: [{ status, days: [], runs: new Map() }],
    unknownSource: null,
    linkedDetail: false,
    webhooks: null,
  });
  return { cli: written.join(''), page };
}

describe('the tail rule, on an ordinary day without webhooks', () => {
  it('spaces the busy streams evenly at the interval status states, not by the square root of their rates', DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150 });
    r.clock.set(r.dayStart + 8 * HOUR);
    const [status] = await collectStatus(r.app, r.config);
    const interval = status!.budget.busyIntervalMinutes;
    expect(interval).not.toBeNull();
    // Three busy streams for 11 hours in 150 requests, less the floors, exploration and the reserve for chance.
    expect(interval!).toBeGreaterThan(10);
    expect(interval!).toBeLessThan(25);
    // The slowest busy hours, checked at twice the interval, are named: hours of a busy stream, as the page and the
    // command say them.
    const slack = status!.budget.busySlackHours;
    expect(Object.keys(slack).length).toBeGreaterThan(0);
    for (const [resource, hours] of Object.entries(slack)) {
      expect(['appointments', 'customers', 'orders']).toContain(resource);
      for (const h of hours) expect(h).toMatch(/^(0[89]|1[0-8]):00$/);
    }
    const texts = statusTexts(status!, new Date(r.dayStart + 8 * HOUR));
    const [first, hours] = Object.entries(slack)[0]!;
    for (const text of [texts.cli, texts.page])
      expect(text).toContain(`twice that in today's slowest busy hours (${first} ${hours.join(', ')}`);

    const played = await r.playDay(REFERENCE_DAY);
    const checksOf = (resource: string) =>
      played.dispatches
        .filter(
          (d) =>
            d.resource === resource && Date.parse(d.firedAt) >= r.dayStart + 9 * HOUR && Date.parse(d.firedAt) < r.dayStart + 18 * HOUR,
        )
        .map((d) => Date.parse(d.firedAt));
    const appointments = checksOf('appointments');
    const customers = checksOf('customers');
    // About as many checks of customers (80 changes a day) as of appointments (300): the square-root rule alone
    // gives appointments about twice as many.
    expect(appointments.length / customers.length).toBeLessThan(1.4);
    expect(appointments.filter((_, i) => i > 0 && appointments[i]! - appointments[i - 1]! > 2 * interval! * MINUTE)).toEqual([]);
    expect(customers.filter((_, i) => i > 0 && customers[i]! - customers[i - 1]! > 2 * interval! * MINUTE)).toEqual([]);
    expect(played.dispatches.some((d) => d.reason === 'interval')).toBe(true);
    expect(played.requests).toBeLessThanOrEqual(150);
    const busy = new Set(['appointments', 'customers', 'orders']);
    expect(played.changes.filter((c) => busy.has(c.resource) && c.visibleAt === null)).toEqual([]);
    // Memberships (about ten changes a day) is left to exploration, every few hours: the look after the active hours,
    // counted in the plan, reads what changed after its last turn tonight, not tomorrow.
    const memberships = played.changes.filter((c) => c.resource === 'memberships');
    expect(memberships.length).toBeGreaterThan(0);
    expect(memberships.filter((c) => c.visibleAt === null)).toEqual([]);
    expect(played.dispatches.some((d) => d.resource === 'memberships' && Date.parse(d.firedAt) >= r.dayStart + 19 * HOUR)).toBe(true);
  });
});

describe('hours that moved and stayed', () => {
  it(
    'serves the fourth evening in a row from what the first three taught it: checks come with the rush, not after it',
    DAY_TIMEOUT,
    async () => {
      // A Monday: four evening days (Monday to Thursday) after 28 ordinary days. The first and the fourth are
      // scored alike (a decision a minute); the two between are only learned from (a decision every 5 minutes).
      const r = await startRig({ budget: 150, date: '2026-11-16' });
      const days: Array<Awaited<ReturnType<DayRig['play']>> & { start: number }> = [];
      for (let d = 0; d < 4; d++) {
        const start = r.dayStart + d * DAY;
        const tick = d === 0 || d === 3 ? 60 : 300;
        const played = await r.play(planDay(EVENING, r.localDate(start + 12 * HOUR), ZONE, 11 + d), start, start + DAY, undefined, tick);
        days.push({ ...played, start });
      }
      const [first, , , fourth] = days as [(typeof days)[0], unknown, unknown, (typeof days)[0]];
      // When the rush's changes were read: the first check after 18:00 that found some, as minutes into the rush.
      const firstFind = async (day: (typeof days)[0]) => {
        const found = await windows(r, 'appointments', day.start + 18 * HOUR, day.start + DAY);
        return (found.find((w) => w.found > 0)!.end - (day.start + 18 * HOUR)) / MINUTE;
      };
      const p95 = (day: (typeof days)[0]) => {
        const stale = stalenessMinutes(day.changes).sort((a, b) => a - b);
        return stale[Math.floor(0.95 * (stale.length - 1))]!;
      };
      // The first evening is found by a check the model did not plan for the rush; by the fourth, the forecast has
      // the evening (the recent profile) and the rush is read from its start.
      expect(await firstFind(fourth)).toBeLessThan(await firstFind(first));
      expect(await firstFind(fourth)).toBeLessThanOrEqual(30);
      expect(p95(fourth)).toBeLessThan(p95(first));
      expect(p95(fourth)).toBeLessThanOrEqual(20);
      // The mornings it no longer has are not checked as if busy: fewer appointment checks before 17:00 than in the rush.
      const between = (from: number, to: number) =>
        fourth.dispatches.filter(
          (d) =>
            d.resource === 'appointments' &&
            Date.parse(d.firedAt) >= fourth.start + from * HOUR &&
            Date.parse(d.firedAt) < fourth.start + to * HOUR,
        );
      expect(between(0, 17).length).toBeLessThan(between(18, 21).length);
      for (const day of days) expect(day.changes.filter((c) => c.visibleAt === null)).toEqual([]);
      // The model has the evening: on the fourth day the 19:00 hour is forecast at half its rush or more (50 an hour),
      // from the three evenings before it (the recent profile), where the long memory alone still says a few.
      const stored = (await loadChangeModels(r.app.pool, 'clinic')).get('appointments')!;
      const evening = fourth.start + 19 * HOUR + 30 * MINUTE;
      const today = Math.floor(slotOf(evening, ZONE) / 24);
      expect(slotRatesWithMoved(stored, new Date(evening), today).rates[slotOf(evening, ZONE)]!).toBeGreaterThanOrEqual(25);
      expect(r.requestsOn(fourth.start, fourth.start + DAY).requests).toBeLessThanOrEqual(150);
    },
  );
});

describe("a new practice's first day, with webhooks", () => {
  it(
    'reads its day from its notifications: the morning is not priced as quiet, nor the budget held for an evening and a night',
    DAY_TIMEOUT,
    async () => {
      // No history: the first pass's records are spread round the clock, so the model knows neither the practice's
      // hours nor how busy it is when open.
      const r = await startRig({ budget: 150, historyDays: 0, webhooks: true });
      const [before] = await collectStatus(r.app, r.config);
      expect(before!.budget.workday).toBeNull();
      const { played, noon } = await playReferenceDay(r);
      // Status says how the day is read: since the first of the morning's notifications (the reference day opens at
      // 8:00), closing expected 8 to 12 hours after it.
      const since = Date.parse(noon!.budget.workday!.since);
      expect(since).toBeGreaterThanOrEqual(r.dayStart + 8 * HOUR);
      expect(since).toBeLessThan(r.dayStart + 9 * HOUR);
      expect(Date.parse(noon!.budget.workday!.closingFrom)).toBe(since + 8 * HOUR);
      expect(Date.parse(noon!.budget.workday!.closingTo)).toBe(since + 12 * HOUR);
      const said = statusTexts(noon!, new Date(r.dayStart + 12 * HOUR));
      expect(said.cli).toContain(
        `hours: not known yet; today's working day read from its notifications since ${noon!.budget.workday!.since}`,
      );
      expect(said.page).toContain('hours not known yet: read from its notifications since');

      expect(r.requestsOn(r.dayStart, r.dayStart + DAY).requests).toBeLessThanOrEqual(150);
      const busy = played.changes.filter((c) => ['appointments', 'customers', 'orders'].includes(c.resource));
      expect(busy.filter((c) => c.visibleAt === null)).toEqual([]);
      const stale = stalenessMinutes(busy).sort((a, b) => a - b);
      expect(stale[Math.floor(0.95 * (stale.length - 1))]).toBeLessThanOrEqual(15);
      // Its notified checks wait about as long in the afternoon as in the morning: the bound is not stretched for
      // an evening that never comes.
      const waits = (from: number, to: number) => {
        const w = busy
          .filter((c) => c.at >= r.dayStart + from * HOUR && c.at < r.dayStart + to * HOUR)
          .map((c) => (c.visibleAt! - c.at) / MINUTE);
        return w.reduce((a, b) => a + b, 0) / w.length;
      };
      expect(waits(15, 19)).toBeLessThanOrEqual(waits(9, 13) * 1.5);
    },
  );
});

describe("a new practice's first day, without webhooks", () => {
  it('looks at the practice in turns through the night, and checks every stream once when one finds it at work', DAY_TIMEOUT, async () => {
    const r = await startRig({ budget: 150, historyDays: 0, webhooks: false });
    const streams = ['appointments', 'customers', 'orders', 'memberships', 'products', 'services', 'employees'];
    const { played, noon } = await playReferenceDay(r);
    // Status says when its checks found it at work: after the reference day's opening at 8:00, within the hour.
    expect(noon!.budget.workday).toBeNull();
    const since = Date.parse(noon!.budget.atWorkSince!);
    expect(since).toBeGreaterThanOrEqual(r.dayStart + 8 * HOUR);
    expect(since).toBeLessThan(r.dayStart + 9 * HOUR);
    // The text of `pmsync status` and the status page say so, from the same status.
    const said = statusTexts(noon!, new Date(r.dayStart + 12 * HOUR));
    expect(said.cli).toContain(`hours: not known yet; its checks found it at work today since ${noon!.budget.atWorkSince}`);
    expect(said.page).toContain('hours not known yet: its checks found it at work since');
    // Its streams' rates hold to the end of the longest working day it may have, twelve hours after it was found at
    // work (it was not seen at work past that by noon), and both texts say until when.
    const until = Date.parse(noon!.budget.atWorkUntil!);
    expect(until).toBe(since + WORKDAY_HOURS[1] * HOUR);
    expect(said.cli).toContain(`its rates held until ${noon!.budget.atWorkUntil}`);
    expect(said.page).toContain('its rates held until');

    // Through the closed night its streams take turns: some stream looks at least every 45 minutes (checked all
    // at once at the exploration bound, they looked once every two hours and more).
    const checks = await Promise.all(streams.map((s) => windows(r, s, r.dayStart + HOUR, r.dayStart + 8 * HOUR)));
    const night = checks.flat().map((w) => w.end);
    const looks = [r.dayStart + HOUR, ...night, r.dayStart + 8 * HOUR].sort((a, b) => a - b);
    const gaps = looks.slice(1).map((t, i) => (t - looks[i]!) / MINUTE);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(45);

    // The first check to find it at work wakes the busy streams: each is checked within 10 minutes of it.
    const busyStreams = ['appointments', 'customers', 'orders'];
    const morning = await Promise.all(busyStreams.map((s) => windows(r, s, r.dayStart + 7 * HOUR, r.dayStart + 11 * HOUR)));
    const found = Math.min(
      ...morning
        .flat()
        .filter((w) => w.found >= 2)
        .map((w) => w.end),
    );
    for (const list of morning) expect(list.some((w) => w.end >= found && w.end <= found + 10 * MINUTE)).toBe(true);

    // Found at work, its quiet streams are explored at the usual share (a bound of 4 hours at 150 a day), not at half
    // the budget (about every 2 hours 15 minutes, five checks each by 19:00).
    const quietStreams = ['products', 'services', 'employees'];
    const afternoon = await Promise.all(quietStreams.map((s) => windows(r, s, found + MINUTE, r.dayStart + 19 * HOUR)));
    for (const list of afternoon) expect(list.length).toBeLessThanOrEqual(3);

    // The evening after its longest working day is not checked at the busy interval, only looked at again as the
    // evidence of its empty hours fades: the practice closed at 19:00, and its streams' rates, read from the day's
    // checks, held to midnight had it checked about every half hour until 23:30 (40 checks after 19:00), budget held
    // all day for an evening that never came.
    const evening = await Promise.all(busyStreams.map((s) => windows(r, s, until + HOUR, r.dayStart + DAY)));
    expect(evening.flat().length).toBeLessThanOrEqual(2 * busyStreams.length);

    expect(r.requestsOn(r.dayStart, r.dayStart + DAY).requests).toBeLessThanOrEqual(150);
    const busy = played.changes.filter((c) => busyStreams.includes(c.resource));
    expect(busy.filter((c) => c.visibleAt === null)).toEqual([]);
    const stale = stalenessMinutes(busy).sort((a, b) => a - b);
    // Before, its streams were looked at together, and once found at work priced by a model spread round the clock:
    // one of them was checked every two minutes all morning, and 69 busy
    // changes were left unread at midnight (p95 483 minutes); the night's longest gap between looks was 133 minutes.
    // Then, with its quiet streams explored at half the budget all day, the busy streams were checked every 37 minutes
    // (p95 at most 35); at the usual share once found at work, 28.9; planned to the end of its longest working day,
    // not to midnight, 23.2.
    expect(stale[Math.floor(0.95 * (stale.length - 1))]).toBeLessThanOrEqual(24);
  });
});

describe("a new practice's next days, without webhooks", () => {
  it('gives its second weekday the hours its first showed, and does not check a closed Sunday as a busy day', DAY_TIMEOUT, async () => {
    // A Friday: no history before its first pass (a few hundred records spread over three years), the reference day on
    // Friday and Saturday, nothing on Sunday.
    const r = await startRig({ budget: 150, historyDays: 0, webhooks: false, date: '2026-11-20' });
    const busyStreams = ['appointments', 'customers', 'orders'];
    const days: Array<Awaited<ReturnType<DayRig['play']>> & { start: number }> = [];
    for (let d = 0; d < 3; d++) {
      const start = r.dayStart + d * DAY;
      const changes = d === 2 ? [] : planDay(REFERENCE_DAY, r.localDate(start + 12 * HOUR), ZONE, 5 + d);
      days.push({ ...(await r.play(changes, start, start + DAY)), start });
    }
    const [first, second, sunday] = days as [(typeof days)[0], (typeof days)[0], (typeof days)[0]];
    const busy = (day: (typeof days)[0]) => day.changes.filter((c) => busyStreams.includes(c.resource));
    const p95 = (day: (typeof days)[0]) => {
      const stale = stalenessMinutes(busy(day)).sort((a, b) => a - b);
      return stale[Math.floor(0.95 * (stale.length - 1))]!;
    };
    // The Saturday is read within its first opening hour. Its first day read made the Friday many times busier than
    // every other weekday of its memory, which called them all closed and gave them none of the Friday's hours: the
    // Saturday was checked at 07:26 and next at 14:23, with 182 changes waiting (p95 354 min).
    for (const resource of busyStreams) {
      const morning = await windows(r, resource, second.start + 8 * HOUR, second.start + 9 * HOUR);
      expect(morning.length, resource).toBeGreaterThan(0);
    }
    expect(p95(second)).toBeLessThan(p95(first));
    expect(p95(second)).toBeLessThan(30);
    for (const day of [first, second]) expect(busy(day).filter((c) => c.visibleAt === null)).toEqual([]);
    // The closed Sunday: the hours the practice moved into on its first days stay empty, and are checked less as
    // they do (exempt from today's activity, they were checked as a busy day's: 130 requests). Two weekdays read
    // busy, the Sunday its memory holds quiet is closed again.
    expect(r.requestsOn(sunday.start, sunday.start + DAY).requests).toBeLessThanOrEqual(50);
  });
});

describe("a new practice's first day, without webhooks, its hours stated", () => {
  it(
    'plans by the stated hours until its changes show its own: no looks through the night, the day read as told',
    DAY_TIMEOUT,
    async () => {
      const stated = ['Mon-Sat 08:00-19:00'];
      const r = await startRig({ budget: 150, historyDays: 0, webhooks: false, source: { hours: stated } });
      const { played, noon } = await playReferenceDay(r);
      // Status says the plan goes by the stated hours, not by when its checks found it at work.
      expect(noon!.budget.hoursStated).toEqual({ hours: stated, inUse: true });
      expect(noon!.budget.atWorkSince).toBeNull();
      const said = statusTexts(noon!, new Date(r.dayStart + 12 * HOUR));
      expect(said.cli).toContain('hours: as stated (Mon-Sat 08:00-19:00) until its changes show its own');
      expect(said.page).toContain('as stated (Mon-Sat 08:00-19:00) until its changes show its own');

      // Nothing is looked at in the night it is closed (told the hours, it does not explore them), and its busy
      // streams are read through its day.
      expect(r.requestsOn(r.dayStart, r.dayStart + 8 * HOUR).requests).toBe(0);
      expect(r.requestsOn(r.dayStart, r.dayStart + DAY).requests).toBeLessThanOrEqual(150);
      const busy = played.changes.filter((c) => ['appointments', 'customers', 'orders'].includes(c.resource));
      expect(busy.filter((c) => c.visibleAt === null)).toEqual([]);
      const stale = stalenessMinutes(busy).sort((a, b) => a - b);
      // Not told its hours, the same day's p95 is up to 35 minutes (the test above).
      expect(stale[Math.floor(0.95 * (stale.length - 1))]).toBeLessThanOrEqual(20);

      // Its day's changes show its hours (a weekday's changes count once it is over): from then on the plan goes by
      // what they show.
      r.clock.set(r.dayStart + DAY + HOUR);
      const [after] = await collectStatus(r.app, r.config);
      expect(after!.budget.hoursStated).toEqual({ hours: stated, inUse: false });
      expect(statusTexts(after!, new Date(r.clock.ms)).cli).toContain(
        'hours: as its changes show them (the stated Mon-Sat 08:00-19:00 are no longer used)',
      );
    },
  );
});
