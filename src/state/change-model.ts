/**
 * pmsync.change_model: each stream's change rate, learned from its own runs,
 * per hour of the week in the practice's time zone.
 *
 * Learning. Every completed window adds what it read: the rows it changed,
 * counted in the hour-of-week slot of their ModifiedOn, and the hours it
 * covered (its exposure), spread over the slots they fall in. The first pass
 * of a stream warm-starts the model from history: the rows it read whose
 * ModifiedOn falls within the last WARM_START_DAYS, over that much exposure,
 * scaled up for the changes a record's latest ModifiedOn hides
 * (changesBehind). Stored counts and
 * exposure decay with a half-life of HALF_LIFE_DAYS, so the model follows a
 * practice's seasons. src/scheduler/rates.ts reads rates from it.
 *
 * Beside them each slot keeps a recent profile: the same counts and exposure
 * decaying with a half-life of RECENT_HALF_LIFE_DAYS, so hours that moved (an
 * evening opening, a new closed weekday) show within days, where the long
 * memory needs weeks. It learns from the windows read day by day only: a
 * first pass's history shows each record's latest change alone, which makes
 * its latest days look busier than they were.
 */
import type { Queryable } from '../db/pool.ts';
import { forEachSlotPiece, wallSlot } from '../time.ts';

/** Hours of the week: weekday * 24 + hour, Sunday = 0. */
export const SLOTS = 168;
export const HALF_LIFE_DAYS = 28;
export const RECENT_HALF_LIFE_DAYS = 2;
export const WARM_START_DAYS = 28;

export interface StoredSlot {
  slot: number;
  changes: number;
  exposureHours: number;
  /** The same, decaying with RECENT_HALF_LIFE_DAYS. */
  recentChanges: number;
  recentExposureHours: number;
  asOf: Date;
}

/** Hours of [from, to) in each slot. */
export function exposureBySlot(from: Date, to: Date, timeZone: string): Map<number, number> {
  const out = new Map<number, number>();
  forEachSlotPiece(from.getTime(), to.getTime(), timeZone, (slot, a, b) => out.set(slot, (out.get(slot) ?? 0) + (b - a) / 3_600_000));
  return out;
}

/**
 * The changes one window reads, tallied as its pages are written: rows whose
 * ModifiedOn is at or after `sinceWall` (the cursor the window started from,
 * as wall-clock time; rows before it were read by an earlier window), by slot.
 * Pages whose rows carry no ModifiedOn contribute the rows they changed,
 * spread over the window's hours when it completes.
 */
export class ChangeTally {
  readonly bySlot = new Map<number, number>();
  undated = 0;
  /** Rows read that carry a ModifiedOn, at or after `sinceWall` or not. */
  dated = 0;
  /** The earliest ModifiedOn (wall clock) at or after `sinceWall`: when the window's changes began. */
  earliest: string | null = null;
  private readonly sinceWall: string | null;

  constructor(sinceWall: string | null) {
    this.sinceWall = sinceWall;
  }

  /** One page: the ModifiedOn of each valid row, and how many rows it inserted or changed. */
  addPage(modified: Array<string | null>, changed: number): void {
    let dated = 0;
    for (const wall of modified) {
      if (wall === null) continue;
      dated++;
      if (this.sinceWall !== null && wall < this.sinceWall) continue;
      if (this.earliest === null || wall < this.earliest) this.earliest = wall;
      const slot = wallSlot(wall);
      this.bySlot.set(slot, (this.bySlot.get(slot) ?? 0) + 1);
    }
    this.dated += dated;
    if (dated === 0) this.undated += changed;
  }

  toJSON(): { bySlot: Array<[number, number]>; undated: number; dated: number; earliest?: string } {
    return {
      bySlot: [...this.bySlot],
      undated: this.undated,
      dated: this.dated,
      ...(this.earliest !== null ? { earliest: this.earliest } : {}),
    };
  }

  static from(
    sinceWall: string | null,
    saved: { bySlot?: Array<[number, number]>; undated?: number; dated?: number; earliest?: string } | undefined,
  ): ChangeTally {
    const t = new ChangeTally(sinceWall);
    for (const [slot, n] of saved?.bySlot ?? []) t.bySlot.set(slot, n);
    t.undated = saved?.undated ?? 0;
    t.dated = saved?.dated ?? 0;
    t.earliest = saved?.earliest ?? null;
    return t;
  }
}

/** Beyond this share of records changed, history says little more about how often they change. */
const MAX_CHANGED_SHARE = 0.99;

/**
 * How many changes `distinct` changed records out of `records` stand for. A
 * record shows only its latest ModifiedOn, so a first pass sees one change
 * per record however many it had. If changes fall on records at random, k of
 * them leave records * (1 - e^(-k / records)) distinct ones changed (the
 * occupancy problem), so k = -records * ln(1 - distinct / records).
 */
export function changesBehind(distinct: number, records: number): number {
  if (distinct <= 0 || records <= 0) return distinct;
  const share = Math.min(distinct / records, MAX_CHANGED_SHARE);
  return Math.max(distinct, -records * Math.log(1 - share));
}

/**
 * What a completed window adds to the model: the tallied changes, and the
 * hours it covered, from `from` (the cursor it started from, or the start of
 * the warm-start period on a first pass) to its end. Undated changes are
 * spread over those hours; on a first pass they are history, not changes, and
 * are left out.
 */
export interface Observation {
  changes: Map<number, number>;
  exposure: Map<number, number>;
  /** The same for the recent profile (empty on a first pass); absent: as the above. */
  recentChanges?: Map<number, number>;
  recentExposure?: Map<number, number>;
}

export function windowObservation(tally: ChangeTally, from: Date, to: Date, timeZone: string, firstPass: boolean): Observation {
  const exposure = exposureBySlot(from, to, timeZone);
  const changes = new Map(tally.bySlot);
  if (firstPass) {
    // History shows each record's latest change only: scale up for the ones it hides.
    let distinct = 0;
    for (const n of changes.values()) distinct += n;
    const scale = distinct > 0 ? changesBehind(distinct, tally.dated) / distinct : 1;
    if (scale !== 1) for (const [slot, n] of changes) changes.set(slot, n * scale);
    // Not in the recent profile: a record shows only its latest change, so a first pass's latest days look busier
    // than its earlier ones (their changes hide behind later ones), and no single scale corrects that hour by
    // hour. The recent profile learns from the windows pmsync reads as the days go by, where every change shows.
    return { changes, exposure, recentChanges: new Map(), recentExposure: new Map() };
  }
  if (tally.undated > 0) {
    let hours = 0;
    for (const h of exposure.values()) hours += h;
    if (hours > 0) for (const [slot, h] of exposure) changes.set(slot, (changes.get(slot) ?? 0) + (tally.undated * h) / hours);
  }
  return { changes, exposure };
}

interface StoredRow {
  slot: number;
  changes: number;
  exposure_hours: number;
  recent_changes: number;
  recent_exposure_hours: number;
  as_of: Date;
}
const STORED_COLUMNS = 'slot, changes, exposure_hours, recent_changes, recent_exposure_hours, as_of';

function storedSlot(r: StoredRow): StoredSlot {
  return {
    slot: r.slot,
    changes: r.changes,
    exposureHours: r.exposure_hours,
    recentChanges: r.recent_changes,
    recentExposureHours: r.recent_exposure_hours,
    asOf: r.as_of,
  };
}

/** Every stored slot of a source's streams, by resource. */
export async function loadChangeModels(db: Queryable, source: string): Promise<Map<string, StoredSlot[]>> {
  const res = await db.query<StoredRow & { resource: string }>(
    `SELECT resource, ${STORED_COLUMNS} FROM pmsync.change_model WHERE source = $1`,
    [source],
  );
  const out = new Map<string, StoredSlot[]>();
  for (const r of res.rows) {
    const list = out.get(r.resource) ?? [];
    list.push(storedSlot(r));
    out.set(r.resource, list);
  }
  return out;
}

/** Every stored slot of many sources with one query: source -> resource -> slots. */
export async function loadChangeModelsOf(db: Queryable, sources: string[]): Promise<Map<string, Map<string, StoredSlot[]>>> {
  const res = await db.query<StoredRow & { source: string; resource: string }>(
    `SELECT source, resource, ${STORED_COLUMNS} FROM pmsync.change_model WHERE source = ANY($1::text[])`,
    [sources],
  );
  const out = new Map<string, Map<string, StoredSlot[]>>();
  for (const r of res.rows) {
    const models = out.get(r.source) ?? new Map<string, StoredSlot[]>();
    const list = models.get(r.resource) ?? [];
    list.push(storedSlot(r));
    models.set(r.resource, list);
    out.set(r.source, models);
  }
  return out;
}

/**
 * Adds one observation: by slot, its changes and exposure, and their
 * age-weighted counterparts for the recent profile (the same when absent).
 * Stored values decay to `at` before the new ones are added, in the same
 * statement, so replicas adding at once never lose each other's counts.
 */
export async function addObservation(db: Queryable, source: string, resource: string, at: Date, seen: Observation): Promise<void> {
  const { changes, exposure } = seen;
  const recentChanges = seen.recentChanges ?? changes;
  const recentExposure = seen.recentExposure ?? exposure;
  const slots = [...new Set([...changes.keys(), ...exposure.keys(), ...recentChanges.keys(), ...recentExposure.keys()])];
  if (slots.length === 0) return;
  const decay = (half: string) => `power(0.5, greatest(0, extract(epoch FROM $3::timestamptz - m.as_of)) / (${half} * 86400.0))`;
  await db.query(
    `INSERT INTO pmsync.change_model AS m (source, resource, slot, changes, exposure_hours, recent_changes, recent_exposure_hours, as_of)
     SELECT $1, $2, o.slot, o.changes, o.exposure, o.recent_changes, o.recent_exposure, $3
     FROM unnest($4::int[], $5::float8[], $6::float8[], $7::float8[], $8::float8[]) AS o(slot, changes, exposure, recent_changes, recent_exposure)
     ON CONFLICT (source, resource, slot) DO UPDATE SET
       changes = m.changes * ${decay('$9')} + excluded.changes,
       exposure_hours = m.exposure_hours * ${decay('$9')} + excluded.exposure_hours,
       recent_changes = m.recent_changes * ${decay('$10')} + excluded.recent_changes,
       recent_exposure_hours = m.recent_exposure_hours * ${decay('$10')} + excluded.recent_exposure_hours,
       as_of = greatest(m.as_of, $3::timestamptz)`,
    [
      source,
      resource,
      at,
      slots,
      slots.map((s) => changes.get(s) ?? 0),
      slots.map((s) => exposure.get(s) ?? 0),
      slots.map((s) => recentChanges.get(s) ?? 0),
      slots.map((s) => recentExposure.get(s) ?? 0),
      HALF_LIFE_DAYS,
      RECENT_HALF_LIFE_DAYS,
    ],
  );
}

/** One slot as loadStreamModels reads it: an int4 and five float8s. */
const SLOT_BYTES = 4 + 5 * 8;

/**
 * The stored slots of the given streams with one query: source -> resource ->
 * slots. The scheduler reads a stream's model again after each of its checks,
 * so this reads only the streams asked for. A stream comes back as one row,
 * its slots as one bytea of fixed-width binary numbers (SLOT_BYTES each: the
 * slot as int4send, the four floats and as_of in milliseconds as float8send,
 * big-endian IEEE 754): 168 rows of seven columns a stream, each parsed by
 * the driver, cost the decider more than planning did, and reading numbers
 * from text still cost it a fifth of its time (bench/RESULTS.md, "Plans
 * and reads made cheaper"). The bytes are the stored doubles themselves, so
 * the values are exact whatever the connection's extra_float_digits.
 */
export async function loadStreamModels(
  db: Queryable,
  streams: ReadonlyArray<{ source: string; resource: string }>,
): Promise<Map<string, Map<string, StoredSlot[]>>> {
  const out = new Map<string, Map<string, StoredSlot[]>>();
  if (streams.length === 0) return out;
  const res = await db.query<{ source: string; resource: string; slots: Buffer }>(
    `SELECT k.source, k.resource,
            string_agg(int4send(m.slot) || float8send(m.changes) || float8send(m.exposure_hours)
                         || float8send(m.recent_changes) || float8send(m.recent_exposure_hours)
                         || float8send((extract(epoch FROM m.as_of) * 1000)::float8), ''::bytea) AS slots
     FROM unnest($1::text[], $2::text[]) AS k(source, resource)
     JOIN pmsync.change_model m ON m.source = k.source AND m.resource = k.resource
     GROUP BY k.source, k.resource`,
    [streams.map((s) => s.source), streams.map((s) => s.resource)],
  );
  for (const r of res.rows) {
    const b = r.slots;
    // Read through a DataView (big-endian, as the bytes are): the same numbers as Buffer's readInt32BE and
    // readDoubleBE, which copy a double's bytes one at a time and cost the decider more than the rest of the read.
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const list: StoredSlot[] = [];
    for (let o = 0; o + SLOT_BYTES <= b.length; o += SLOT_BYTES) {
      list.push({
        slot: view.getInt32(o),
        changes: view.getFloat64(o + 4),
        exposureHours: view.getFloat64(o + 12),
        recentChanges: view.getFloat64(o + 20),
        recentExposureHours: view.getFloat64(o + 28),
        asOf: new Date(view.getFloat64(o + 36)),
      });
    }
    let models = out.get(r.source);
    if (!models) out.set(r.source, (models = new Map()));
    models.set(r.resource, list);
  }
  return out;
}
