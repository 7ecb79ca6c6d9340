import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { ProAppointment, ProPatient, ProWaitlistSlot, Simulator } from '../../simulator/index.ts';
import { call, TestClock } from './support.ts';

const TOKEN = 'pro-token';
const PRACTICE = 31;

describe('Pro API', () => {
  // A Monday morning, so the week ahead has bookable weekday slots.
  const clock = new TestClock('2025-06-02T08:00:00Z');
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 11,
      now: clock.now,
      tenants: [],
      practices: [
        { token: TOKEN, practiceId: PRACTICE, sizes: { patients: 260, appointmentsPerPatient: 3, waitlist: 4, waitlistSlots: 6 } },
      ],
    });
  });
  afterAll(() => sim.close());
  const pro = (path: string, init: Parameters<typeof call>[1] = {}) =>
    call(`${sim.proBaseUrl()}/practices/${PRACTICE}/${path}`, { ...init, headers: { authorization: TOKEN, ...init.headers } });
  type Data<T> = { data: T[] };

  it('wraps lists in { data } with Limit defaulting to 25 and clamped to 100', async () => {
    const first = await pro('patients');
    expect(first.status).toBe(200);
    expect(Object.keys(first.json<object>())).toEqual(['data']);
    expect(first.json<Data<ProPatient>>().data).toHaveLength(25);
    expect((await pro('patients?Limit=500')).json<Data<ProPatient>>().data).toHaveLength(100);
    const third = (await pro('patients?Page=3&Limit=100')).json<Data<ProPatient>>().data;
    expect(third).toHaveLength(60);
    expect(third[0]).toEqual(sim.practice(PRACTICE).list('patients')[200]);
    expect((await pro('patients?Page=9&Limit=100')).json()).toEqual({ data: [] });
    expect((await pro('patients?Limit=0')).status).toBe(400);
    expect((await pro('patients?Page=x')).status).toBe(400);
  });

  it('filters patients by name, DOB and cell phone', async () => {
    const target = sim.practice(PRACTICE).list('patients')[17] as ProPatient;
    const byName = await pro(`patients?LastName=${target.lastName.toUpperCase()}&FirstName=${target.firstName}&Limit=100`);
    const found = byName.json<Data<ProPatient>>().data;
    expect(found.map((p) => p.patientId)).toContain(target.patientId);
    expect(found.every((p) => p.lastName === target.lastName && p.firstName === target.firstName)).toBe(true);
    expect((await pro(`patients?DOB=${target.dob}`)).json<Data<ProPatient>>().data.map((p) => p.patientId)).toContain(target.patientId);
    const digits = target.cellPhone.replace(/\D/g, '');
    expect((await pro(`patients?CellPhone=%2B1${digits}`)).json<Data<ProPatient>>().data.map((p) => p.patientId)).toContain(
      target.patientId,
    );
    expect((await pro('patients?DOB=1990-13-01')).status).toBe(400);
  });

  it('lists a patient’s appointments', async () => {
    const patient = sim.practice(PRACTICE).list('patients')[0] as ProPatient;
    const reply = await pro(`patients/${patient.patientId}/appointments`);
    const data = reply.json<Data<ProAppointment>>().data;
    expect(data).toHaveLength(3);
    expect(data.every((a) => a.patientId === patient.patientId && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(a.apptDate))).toBe(true);
    expect((await pro(`patients/${patient.patientId}/appointments?Limit=2&Page=2`)).json<Data<ProAppointment>>().data).toHaveLength(1);
    expect((await pro('patients/1/appointments')).status).toBe(404);
  });

  it('books through event types, providers and slots; a taken slot is refused', async () => {
    const types = (await pro('event-types')).json<Data<{ eventTypeId: number; name: string }>>().data;
    expect(types.length).toBeGreaterThan(0);
    expect((await pro('scheduling/availability/providers')).status).toBe(400);
    expect((await pro('scheduling/availability/providers?EventTypeId=abc')).status).toBe(400);
    let eventTypeId = 0;
    let providerId = 0;
    for (const type of types) {
      const entries = (await pro(`scheduling/availability/providers?EventTypeId=${type.eventTypeId}`)).json<
        Data<{ provider: { providerId: number } }>
      >().data;
      if (entries[0] !== undefined) {
        eventTypeId = type.eventTypeId;
        providerId = entries[0].provider.providerId;
        break;
      }
    }
    expect(providerId).toBeGreaterThan(0);
    const facility = sim.practice(PRACTICE).get('providers', providerId)?.serviceFacilityId;
    const scoped = (await pro(`scheduling/availability/providers?EventTypeId=${eventTypeId}&serviceFacilityId=${facility}`)).json<
      Data<{ provider: { providerId: number } }>
    >();
    expect(scoped.data.map((e) => e.provider.providerId)).toContain(providerId);

    const slotsPath = `scheduling/availability/slots?EventTypeId=${eventTypeId}&ProviderId=${providerId}&Start=2025-06-02&End=2025-06-06`;
    const groups = (await pro(slotsPath)).json<Data<{ providerId: number; slots: string[] }>>().data;
    expect(groups.map((g) => g.providerId)).toEqual([providerId]);
    const slot = groups[0]?.slots[0] as string;
    expect(slot >= '2025-06-02T08:00:00').toBe(true);
    expect((await pro(`scheduling/availability/slots?EventTypeId=${eventTypeId}&Start=2025-06-06&End=2025-06-02`)).status).toBe(400);
    expect((await pro(`scheduling/availability/slots?EventTypeId=${eventTypeId}&Start=June`)).status).toBe(400);

    const patientId = sim.practice(PRACTICE).list('patients')[5]?.patientId;
    const body = { patientId, eventTypeId, providerId, apptDate: slot };
    const booked = await pro('appointments', { method: 'POST', body });
    expect(booked.status).toBe(201);
    const appointment = booked.json<ProAppointment>();
    expect(appointment).toMatchObject(body);
    expect(appointment.appointmentId).toBeGreaterThan(0);
    expect((await pro('appointments', { method: 'POST', body })).status).toBe(409);
    const after = (await pro(slotsPath)).json<Data<{ slots: string[] }>>().data[0]?.slots;
    expect(after).not.toContain(slot);
    expect(sim.practice(PRACTICE).get('appointments', appointment.appointmentId)).toEqual(appointment);

    expect((await pro('appointments', { method: 'POST', body: { ...body, apptDate: '2025-06-03T09:10:00' } })).status).toBe(400);
    expect((await pro('appointments', { method: 'POST', body: { ...body, apptDate: '2025-05-01T09:00:00' } })).status).toBe(409);
    expect((await pro('appointments', { method: 'POST', body: { eventTypeId, providerId, apptDate: slot } })).status).toBe(400);
    expect((await pro('appointments', { method: 'POST', body: { ...body, patientId: 1 } })).status).toBe(400);
  });

  it('creates and reads waitlist entries', async () => {
    const practice = sim.practice(PRACTICE);
    const patient = practice.list('patients')[2] as ProPatient;
    const eventType = practice.list('eventTypes')[0];
    const provider = practice.list('providers')[0];
    const body = {
      patientId: patient.patientId,
      eventTypeId: eventType?.eventTypeId,
      providerIds: [provider?.providerId],
      daysOfWeek: 'Monday,Wednesday',
      timesOfDay: 'Morning',
      dateRangeStart: '2025-06-10',
      dateRangeEnd: '2025-07-10',
      comments: 'Prefers early',
    };
    const created = await pro('waitlist', { method: 'POST', body });
    expect(created.status).toBe(201);
    const { waitlistId } = created.json<{ waitlistId: number }>();
    const read = await pro(`waitlist/${waitlistId}`);
    expect(read.json()).toEqual({
      waitlistId,
      patient: { patientId: patient.patientId, firstName: patient.firstName, lastName: patient.lastName },
      eventType: { eventTypeId: eventType?.eventTypeId, name: eventType?.name },
      dateFrom: '2025-06-10',
      dateTo: '2025-07-10',
      providerIds: body.providerIds,
      daysOfWeek: 'Monday,Wednesday',
      timesOfDay: 'Morning',
      comments: 'Prefers early',
    });
    for (const bad of [
      { daysOfWeek: 'Monday, Tuesday' },
      { daysOfWeek: 'Mon' },
      { timesOfDay: 'Noonish' },
      { dateRangeStart: '06/10/2025' },
      { providerIds: 'all' },
    ]) {
      expect((await pro('waitlist', { method: 'POST', body: { ...body, ...bad } })).status).toBe(400);
    }
    expect((await pro('waitlist/1')).status).toBe(404);
  });

  it('lists waitlist slots and closes an offered one once', async () => {
    const slots = (await pro('waitlist-slots?Limit=100')).json<Data<ProWaitlistSlot>>().data;
    expect(slots).toHaveLength(6);
    const offered = sim.practice(PRACTICE).create('waitlistSlots', { status: 'offered' });
    const close = (status: string) => pro(`waitlist-slots/${offered.waitlistSlotId}/close`, { method: 'PUT', body: { status } });
    expect((await close('maybe')).status).toBe(400);
    const closed = await close('filled');
    expect(closed.status).toBe(200);
    expect(closed.json<ProWaitlistSlot>().status).toBe('filled');
    expect((await close('declined')).status).toBe(409);
    expect((await pro('waitlist-slots/1/close', { method: 'PUT', body: { status: 'filled' } })).status).toBe(404);
    expect(sim.practice(PRACTICE).get('waitlistSlots', offered.waitlistSlotId)?.status).toBe('filled');
  });

  it('lets tests change Pro data through the practice handle', async () => {
    const practice = sim.practice(PRACTICE);
    const patient = practice.create('patients', { firstName: 'Zed', lastName: 'Quinn' });
    expect((await pro('patients?LastName=quinn')).json<Data<ProPatient>>().data.map((p) => p.patientId)).toEqual([patient.patientId]);
    practice.update('patients', patient.patientId, { lastName: 'Quill' });
    expect((await pro('patients?LastName=quinn')).json<Data<ProPatient>>().data).toEqual([]);
    expect(practice.remove('patients', patient.patientId)).toBe(true);
    expect((await pro('patients?LastName=quill')).json<Data<ProPatient>>().data).toEqual([]);
  });
});
