import { AREA_CODES, EVENT_TYPE_NAMES, FIRST_NAMES, LAST_NAMES } from '../names.ts';
import { combine, Rng } from '../random.ts';
import { dayToDate, utcWall } from '../time.ts';
import type {
  PracticeHandle,
  ProAppointment,
  ProEventType,
  ProPatient,
  ProPracticeOptions,
  ProProvider,
  ProRecords,
  ProResource,
  ProWaitlistEntry,
  ProWaitlistSlot,
} from '../types.ts';

// One Pro practice: patients, appointments, event types, providers, waitlist
// entries and waitlist slots, with the availability grid used for booking.
// Pro wall times are the practice's own local times; the simulator runs every
// practice on UTC wall time.

const DAY_MS = 86_400_000;
export const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;
export const TIMES_OF_DAY = ['Morning', 'Afternoon', 'Evening'] as const;
/** Bookable slots: weekdays, every 30 minutes from 09:00 to 16:30. */
const SLOT_STEP_MINUTES = 30;
const FIRST_SLOT_MINUTE = 9 * 60;
const LAST_SLOT_MINUTE = 16 * 60 + 30;
/** Share of grid slots already taken by bookings the simulator does not model. */
const BLOCKED_SHARE = 0.35;

const DEFAULT_SIZES = { patients: 100, appointmentsPerPatient: 2, eventTypes: 5, providers: 4, waitlist: 10, waitlistSlots: 10 };

const ID_FIELDS: { [R in ProResource]: keyof ProRecords[R] } = {
  patients: 'patientId',
  appointments: 'appointmentId',
  eventTypes: 'eventTypeId',
  providers: 'providerId',
  waitlist: 'waitlistId',
  waitlistSlots: 'waitlistSlotId',
};

const FIRST_IDS: Record<ProResource, number> = {
  patients: 10_001,
  appointments: 500_001,
  eventTypes: 101,
  providers: 201,
  waitlist: 7_001,
  waitlistSlots: 9_001,
};

/** Rows in insertion order plus an id index; removal is rare, so it may be O(n). */
class Table<T> {
  readonly rows: T[] = [];
  private readonly byId = new Map<number, T>();
  private readonly idOf: (row: T) => number;
  nextId: number;
  version = 0;

  constructor(idOf: (row: T) => number, firstId: number) {
    this.idOf = idOf;
    this.nextId = firstId;
  }

  add(row: T): T {
    this.rows.push(row);
    this.byId.set(this.idOf(row), row);
    this.nextId = Math.max(this.nextId, this.idOf(row) + 1);
    this.version++;
    return row;
  }

  get(id: number): T | undefined {
    return this.byId.get(id);
  }

  touched(): void {
    this.version++;
  }

  remove(id: number): boolean {
    const row = this.byId.get(id);
    if (row === undefined) return false;
    this.byId.delete(id);
    this.rows.splice(this.rows.indexOf(row), 1);
    this.version++;
    return true;
  }
}

export class Practice {
  readonly practiceId: number;
  readonly token: string;
  readonly appointmentFields: 'all' | 'spec';
  readonly patients = new Table<ProPatient>((r) => r.patientId, FIRST_IDS.patients);
  readonly appointments = new Table<ProAppointment>((r) => r.appointmentId, FIRST_IDS.appointments);
  readonly eventTypes = new Table<ProEventType>((r) => r.eventTypeId, FIRST_IDS.eventTypes);
  readonly providers = new Table<ProProvider>((r) => r.providerId, FIRST_IDS.providers);
  readonly waitlist = new Table<ProWaitlistEntry>((r) => r.waitlistId, FIRST_IDS.waitlist);
  readonly waitlistSlots = new Table<ProWaitlistSlot>((r) => r.waitlistSlotId, FIRST_IDS.waitlistSlots);
  private readonly rng: Rng;
  private readonly key: number;
  private readonly anchorDay: number;
  private readonly now: () => Date;
  private byPatient: { version: number; map: Map<number, ProAppointment[]> } = { version: -1, map: new Map() };
  private booked: { version: number; set: Set<string> } = { version: -1, set: new Set() };

  constructor(options: ProPracticeOptions, seed: number, anchorDay: number, now: () => Date) {
    this.practiceId = options.practiceId;
    this.token = options.token;
    this.appointmentFields = options.appointmentFields ?? 'all';
    this.key = combine(seed, options.practiceId);
    this.rng = new Rng(this.key);
    this.anchorDay = anchorDay;
    this.now = now;
    const sizes = { ...DEFAULT_SIZES, ...options.sizes };
    for (let i = 0; i < sizes.eventTypes; i++) this.create('eventTypes');
    for (let i = 0; i < sizes.providers; i++) this.create('providers');
    for (let i = 0; i < sizes.patients; i++) {
      const patient = this.create('patients');
      for (let a = 0; a < sizes.appointmentsPerPatient; a++) this.create('appointments', { patientId: patient.patientId });
    }
    for (let i = 0; i < sizes.waitlist; i++) this.create('waitlist');
    for (let i = 0; i < sizes.waitlistSlots; i++) this.create('waitlistSlots');
  }

  table<R extends ProResource>(resource: R): Table<ProRecords[R]> {
    return this[resource] as unknown as Table<ProRecords[R]>;
  }

  appointmentsOf(patientId: number): ProAppointment[] {
    if (this.byPatient.version !== this.appointments.version) {
      const map = new Map<number, ProAppointment[]>();
      for (const appointment of this.appointments.rows) {
        const list = map.get(appointment.patientId);
        if (list === undefined) map.set(appointment.patientId, [appointment]);
        else list.push(appointment);
      }
      this.byPatient = { version: this.appointments.version, map };
    }
    return this.byPatient.map.get(patientId) ?? [];
  }

  /** Providers offering an event type. */
  providersFor(eventTypeId: number): ProProvider[] {
    return this.providers.rows.filter((p) => p.eventTypeIds.includes(eventTypeId));
  }

  /** Whether a wall time is on the booking grid (weekday, 09:00-16:30, every 30 minutes). */
  isGridTime(wall: string): boolean {
    const ms = Date.parse(`${wall}Z`);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(wall) || Number.isNaN(ms) || utcWall(ms) !== wall) return false;
    const day = Math.floor(ms / DAY_MS);
    const minute = (ms - day * DAY_MS) / 60_000;
    const weekday = (day + 4) % 7;
    return weekday !== 0 && weekday !== 6 && minute >= FIRST_SLOT_MINUTE && minute <= LAST_SLOT_MINUTE && minute % SLOT_STEP_MINUTES === 0;
  }

  /** Open slots of one provider between two UTC day numbers, inclusive. */
  openSlots(providerId: number, fromDay: number, toDay: number): string[] {
    const nowMs = this.now().getTime();
    const booked = this.bookedSet();
    const slots: string[] = [];
    for (let day = fromDay; day <= toDay; day++) {
      const weekday = (day + 4) % 7;
      if (weekday === 0 || weekday === 6) continue;
      for (let minute = FIRST_SLOT_MINUTE; minute <= LAST_SLOT_MINUTE; minute += SLOT_STEP_MINUTES) {
        const ms = day * DAY_MS + minute * 60_000;
        if (ms <= nowMs || this.blocked(providerId, day, minute)) continue;
        const wall = utcWall(ms);
        if (!booked.has(`${providerId}|${wall}`)) slots.push(wall);
      }
    }
    return slots;
  }

  isOpen(providerId: number, wall: string): boolean {
    if (!this.isGridTime(wall)) return false;
    const ms = Date.parse(`${wall}Z`);
    const day = Math.floor(ms / DAY_MS);
    const minute = (ms - day * DAY_MS) / 60_000;
    return ms > this.now().getTime() && !this.blocked(providerId, day, minute) && !this.bookedSet().has(`${providerId}|${wall}`);
  }

  private blocked(providerId: number, day: number, minute: number): boolean {
    return new Rng(combine(combine(this.key, providerId), day * 1440 + minute)).next() < BLOCKED_SHARE;
  }

  private bookedSet(): Set<string> {
    if (this.booked.version !== this.appointments.version) {
      const set = new Set<string>();
      for (const a of this.appointments.rows) set.add(`${a.providerId}|${a.apptDate}`);
      this.booked = { version: this.appointments.version, set };
    }
    return this.booked.set;
  }

  create<R extends ProResource>(resource: R, partial: Partial<ProRecords[R]> = {}): ProRecords[R] {
    const table = this.table(resource);
    const generated = this.generate(resource, table.nextId);
    const row = { ...generated, ...partial, [ID_FIELDS[resource]]: table.nextId } as ProRecords[R];
    return table.add(row);
  }

  update<R extends ProResource>(resource: R, id: number, patch: Partial<ProRecords[R]> = {}): ProRecords[R] {
    const table = this.table(resource);
    const row = table.get(id);
    if (row === undefined) throw new Error(`no ${resource} record ${id} in practice ${this.practiceId}`);
    const { [ID_FIELDS[resource]]: _id, ...rest } = patch as Record<string, unknown>;
    Object.assign(row as object, rest);
    table.touched();
    return row;
  }

  handle(): PracticeHandle {
    return {
      practiceId: this.practiceId,
      token: this.token,
      list: (resource) => this.table(resource).rows.map((row) => structuredClone(row)),
      get: (resource, id) => {
        const row = this.table(resource).get(id);
        return row === undefined ? undefined : structuredClone(row);
      },
      create: (resource, partial) => structuredClone(this.create(resource, partial)),
      update: (resource, id, patch) => structuredClone(this.update(resource, id, patch)),
      remove: (resource, id) => this.table(resource).remove(id),
    };
  }

  private generate<R extends ProResource>(resource: R, id: number): ProRecords[R] {
    const rng = this.rng;
    const anyPatientId = (): number => this.patients.rows[rng.int(Math.max(1, this.patients.rows.length))]?.patientId ?? FIRST_IDS.patients;
    switch (resource) {
      case 'eventTypes': {
        const index = id - FIRST_IDS.eventTypes;
        const base = EVENT_TYPE_NAMES[index % EVENT_TYPE_NAMES.length] ?? 'Visit';
        const round = Math.floor(index / EVENT_TYPE_NAMES.length);
        const row: ProEventType = {
          eventTypeId: id,
          name: round === 0 ? base : `${base} ${round + 1}`,
          durationMinutes: rng.pick([15, 30, 45, 60]),
        };
        return row as ProRecords[R];
      }
      case 'providers': {
        const types = this.eventTypes.rows.filter(() => rng.chance(0.7)).map((t) => t.eventTypeId);
        const fallback = this.eventTypes.rows[rng.int(Math.max(1, this.eventTypes.rows.length))]?.eventTypeId;
        const row: ProProvider = {
          providerId: id,
          firstName: rng.pick(FIRST_NAMES),
          lastName: rng.pick(LAST_NAMES),
          serviceFacilityId: 1 + (id % 2),
          eventTypeIds: types.length > 0 || fallback === undefined ? types : [fallback],
        };
        return row as ProRecords[R];
      }
      case 'patients': {
        const row: ProPatient = {
          patientId: id,
          firstName: rng.pick(FIRST_NAMES),
          lastName: rng.pick(LAST_NAMES),
          dob: dayToDate(rng.between(-10_950, 13_500)),
          cellPhone: `(${rng.pick(AREA_CODES)}) 555-${String(rng.int(10_000)).padStart(4, '0')}`,
        };
        return row as ProRecords[R];
      }
      case 'appointments': {
        const eventType = this.eventTypes.rows[rng.int(Math.max(1, this.eventTypes.rows.length))];
        const providers = eventType === undefined ? this.providers.rows : this.providersFor(eventType.eventTypeId);
        const provider = providers[rng.int(Math.max(1, providers.length))];
        const day = this.weekday(this.anchorDay + rng.between(-180, 60));
        const minute = FIRST_SLOT_MINUTE + rng.int((LAST_SLOT_MINUTE - FIRST_SLOT_MINUTE) / SLOT_STEP_MINUTES + 1) * SLOT_STEP_MINUTES;
        const row: ProAppointment = {
          appointmentId: id,
          apptDate: utcWall(day * DAY_MS + minute * 60_000),
          patientId: anyPatientId(),
          eventTypeId: eventType?.eventTypeId ?? FIRST_IDS.eventTypes,
          providerId: provider?.providerId ?? FIRST_IDS.providers,
        };
        return row as ProRecords[R];
      }
      case 'waitlist': {
        const eventType = this.eventTypes.rows[rng.int(Math.max(1, this.eventTypes.rows.length))];
        const providers = eventType === undefined ? [] : this.providersFor(eventType.eventTypeId);
        const start = this.anchorDay + rng.between(0, 14);
        const row: ProWaitlistEntry = {
          waitlistId: id,
          patientId: anyPatientId(),
          eventTypeId: eventType?.eventTypeId ?? FIRST_IDS.eventTypes,
          providerIds: providers.filter(() => rng.chance(0.6)).map((p) => p.providerId),
          daysOfWeek:
            DAY_NAMES.slice(1, 6)
              .filter(() => rng.chance(0.5))
              .join(',') || 'Monday',
          timesOfDay: rng.pick(TIMES_OF_DAY),
          dateRangeStart: rng.chance(0.7) ? dayToDate(start) : null,
          dateRangeEnd: rng.chance(0.7) ? dayToDate(start + rng.between(14, 60)) : null,
          comments: rng.pick([
            '',
            'Prefers afternoons',
            'Call before noon',
            'Any provider is fine',
            'Flexible schedule',
            'Préfère le matin 🙏',
            '午後希望',
          ]),
        };
        return row as ProRecords[R];
      }
      case 'waitlistSlots': {
        const entry = this.waitlist.rows[rng.int(Math.max(1, this.waitlist.rows.length))];
        const providerId =
          entry?.providerIds[rng.int(Math.max(1, entry.providerIds.length))] ?? this.providers.rows[0]?.providerId ?? FIRST_IDS.providers;
        const day = this.weekday(this.anchorDay + rng.between(1, 30));
        const minute = FIRST_SLOT_MINUTE + rng.int(16) * SLOT_STEP_MINUTES;
        const roll = rng.next();
        const row: ProWaitlistSlot = {
          waitlistSlotId: id,
          waitlistId: entry?.waitlistId ?? FIRST_IDS.waitlist,
          providerId,
          eventTypeId: entry?.eventTypeId ?? FIRST_IDS.eventTypes,
          slotDate: utcWall(day * DAY_MS + minute * 60_000),
          status: roll < 0.7 ? 'offered' : roll < 0.85 ? 'filled' : 'declined',
        };
        return row as ProRecords[R];
      }
    }
    throw new Error(`unknown Pro resource ${String(resource)}`);
  }

  /** The day itself when a weekday, else the following Monday. */
  private weekday(day: number): number {
    const weekday = (day + 4) % 7;
    return weekday === 6 ? day + 2 : weekday === 0 ? day + 1 : day;
  }
}
