import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { idReader, validateRecords } from '../../src/sync/page.ts';
import { PRO_STREAMS } from '../../src/sync/streams/index.ts';
import type { ProFanOutStream, ProListStream } from '../../src/sync/streams/pro/stream.ts';
import { mapProviderEntry, mapSlotGroup, providerEntryRaw, slotGroupRaw } from '../../src/mappers/pro/availability.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/pro/records.json', import.meta.url), 'utf8')) as Record<
  string,
  Array<Record<string, unknown>>
>;
const entityStreams = PRO_STREAMS.filter((s): s is ProListStream | ProFanOutStream => s.kind !== 'pro-snapshot');
const stream = (resource: string) => entityStreams.find((s) => s.resource === resource)!;
const row = (resource: string, i = 0) => stream(resource).map(stream(resource).raw.parse(fixtures[resource]![i]));

describe('Pro mappers on recorded records', () => {
  for (const s of entityStreams) {
    it(`${s.resource}: maps every fixture, integer id as text, columns matching its table`, () => {
      for (const raw of fixtures[s.resource]!) {
        const parsed = s.raw.parse(raw);
        const mapped = s.map(parsed);
        expect(mapped.id).toBe(String(raw[s.idField]));
        expect(mapped.sourceModifiedAt).toBeNull();
        expect(Object.keys(mapped.columns).sort()).toEqual(Object.keys(s.table.columns).sort());
        expect(parsed).toEqual(raw);
      }
    });
  }

  it('patients and appointments: typed columns, missing optional fields as null', () => {
    expect(row('patients').columns).toEqual({ first_name: 'Maria', last_name: 'Lopez', dob: '1988-04-12', cell_phone: '(312) 555-0142' });
    expect(row('patients', 1).columns).toEqual({ first_name: 'Sam', last_name: 'Lee', dob: null, cell_phone: null });
    expect(row('appointments').columns).toEqual({
      patient_id: 10001,
      event_type_id: 101,
      provider_id: 201,
      appt_date: '2026-11-03T09:30:00',
    });
  });

  it('waitlist entries: the nested read shape flattened, the write-shape fields kept when present', () => {
    expect(row('waitlist').columns).toEqual({
      patient_id: 10001,
      patient_first_name: 'Maria',
      patient_last_name: 'Lopez',
      event_type_id: 101,
      event_type_name: 'Consultation',
      date_from: '2026-11-10',
      date_to: '2026-12-31',
      provider_ids: [201, 203],
      days_of_week: 'Monday,Wednesday',
      times_of_day: 'Morning',
      comments: 'Prefers afternoons',
    });
    expect(row('waitlist', 1).columns).toMatchObject({
      patient_id: null,
      patient_first_name: 'Sam',
      event_type_name: 'Follow-up',
      date_from: null,
      provider_ids: null,
    });
  });

  it('availability: provider entries and slot groups, slots sorted and distinct', () => {
    expect(mapProviderEntry(providerEntryRaw.parse(fixtures['availability-providers']![0]))).toEqual({
      providerId: 201,
      firstName: 'Dana',
      lastName: 'Kim',
    });
    expect(mapSlotGroup(slotGroupRaw.parse(fixtures['availability-slots']![0]))).toEqual({
      providerId: 201,
      slots: ['2026-11-24T09:00:00', '2026-11-24T09:30:00'],
    });
    expect(mapSlotGroup(slotGroupRaw.parse({ provider: { providerId: 7 }, slots: [] }))).toEqual({ providerId: 7, slots: [] });
    expect(slotGroupRaw.safeParse({ providerId: 201, slots: ['tomorrow'] }).success).toBe(false);
  });

  it('sets aside ids that are not integers, or too large to store exactly, with a reason', () => {
    const patients = stream('patients');
    const { good, rejected } = validateRecords(
      patients,
      [{ patientId: '10003' }, { patientId: 2 ** 60 }, { patientId: 10004, firstName: 'Ok' }],
      idReader('patientId'),
    );
    expect(good.map((g) => g.id)).toEqual(['10004']);
    expect(rejected.map((r) => r.reason)).toEqual([expect.stringMatching(/^patientId: .*number/), expect.stringMatching(/^patientId: /)]);
  });
});
