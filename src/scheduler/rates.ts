/**
 * Reading a stream's change rates from its learned model
 * (src/state/change-model.ts): changes per hour for each hour of the week.
 *
 * A slot seen for a few hours says little, so each rate is shrunk toward a
 * broader one: the stream's overall rate (toward a prior of PRIOR_PER_HOUR),
 * the hour of the day across weekdays (toward the overall rate), then the
 * hour of the week (toward its hour of the day). A Monday 10:00 slot is learned
 * from every weekday's 10:00 until Mondays have been seen.
 */
import { HALF_LIFE_DAYS, SLOTS, type StoredSlot } from '../state/change-model.ts';
import { forEachSlotPiece } from '../time.ts';

/** What a stream is assumed to do before anything is seen: one change a day. */
export const PRIOR_PER_HOUR = 1 / 24;
/** Pseudo-exposure (hours) of each level's prior. */
const PRIOR_HOURS = { overall: 24, hourOfDay: 0.25, hourOfWeek: 0.25 } as const;

export function decayFactor(asOf: Date, at: Date): number {
  const days = Math.max(0, at.getTime() - asOf.getTime()) / 86_400_000;
  return 0.5 ** (days / HALF_LIFE_DAYS);
}

/** Changes per hour in each of the 168 slots, as of `at`. */
export function slotRates(stored: StoredSlot[], at: Date): Float64Array {
  const changes = new Float64Array(SLOTS);
  const exposure = new Float64Array(SLOTS);
  for (const s of stored) {
    if (s.slot < 0 || s.slot >= SLOTS) continue;
    const f = decayFactor(s.asOf, at);
    changes[s.slot] = changes[s.slot]! + s.changes * f;
    exposure[s.slot] = exposure[s.slot]! + s.exposureHours * f;
  }
  let totalChanges = 0;
  let totalExposure = 0;
  for (let i = 0; i < SLOTS; i++) {
    totalChanges += changes[i]!;
    totalExposure += exposure[i]!;
  }
  const overall = (totalChanges + PRIOR_HOURS.overall * PRIOR_PER_HOUR) / (totalExposure + PRIOR_HOURS.overall);
  const hourOfDay = new Float64Array(24);
  for (let h = 0; h < 24; h++) {
    let c = 0;
    let e = 0;
    for (let d = 0; d < 7; d++) {
      c += changes[d * 24 + h]!;
      e += exposure[d * 24 + h]!;
    }
    hourOfDay[h] = (c + PRIOR_HOURS.hourOfDay * overall) / (e + PRIOR_HOURS.hourOfDay);
  }
  const rates = new Float64Array(SLOTS);
  for (let i = 0; i < SLOTS; i++)
    rates[i] = (changes[i]! + PRIOR_HOURS.hourOfWeek * hourOfDay[i % 24]!) / (exposure[i]! + PRIOR_HOURS.hourOfWeek);
  return rates;
}

/**
 * What a stream is expected to have built up since `from` by `to`: the
 * changes (E) and their summed age in minutes (A, the staleness a check at
 * `to` would clear).
 */
export function expectedSince(rates: Float64Array, timeZone: string, from: number, to: number): { changes: number; ageMinutes: number } {
  let changes = 0;
  let ageMinutes = 0;
  forEachSlotPiece(from, to, timeZone, (slot, a, b) => {
    const perMinute = rates[slot]! / 60;
    const minutes = (b - a) / 60_000;
    changes += perMinute * minutes;
    // ∫ λ (to - s) ds over [a, b]
    const ageA = (to - a) / 60_000;
    const ageB = (to - b) / 60_000;
    ageMinutes += (perMinute * (ageA * ageA - ageB * ageB)) / 2;
  });
  return { changes, ageMinutes };
}
