import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord, parseInteger, Query, readJson, sendJson, sendText } from '../http.ts';
import { dayToDate, parseDateOnly } from '../time.ts';
import type { ProAppointment, ProPatient, ProWaitlistEntry, RequestLogEntry, WaitlistSlotStatus } from '../types.ts';
import type { Practice } from './practice.ts';
import { DAY_NAMES, TIMES_OF_DAY } from './practice.ts';

// The Pro API (/practices/{practiceId}/...): bare-token auth, `{ data }` list
// envelopes paged by Page and Limit, booking against the availability grid,
// and the waitlist.

export const PRO_DEFAULT_LIMIT = 25;
export const PRO_MAX_LIMIT = 100;
/** Longest Start..End span the slots query accepts. */
const MAX_SLOT_RANGE_DAYS = 92;
const PATIENT_LISTINGS = 16;

export interface ProDeps {
  readonly practices: ReadonlyMap<number, Practice>;
  readonly tokens: ReadonlySet<string>;
}

export interface ProRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly practiceId: string;
  /** Path segments after /practices/{practiceId}. */
  readonly segments: readonly string[];
  readonly log: RequestLogEntry;
}

function fail(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { message });
}

export async function servePro(deps: ProDeps, request: ProRequest): Promise<void> {
  const { req, res, log } = request;
  const token = req.headers.authorization;
  if (token === undefined || !deps.tokens.has(token)) {
    sendText(res, 401, 'Unauthorized');
    return;
  }
  const practiceId = parseInteger(request.practiceId, 1);
  const practice = practiceId === undefined ? undefined : deps.practices.get(practiceId);
  if (practice === undefined || practice.token !== token) return fail(res, 404, 'No such practice');
  log.practiceId = practice.practiceId;
  await route(practice, request);
}

async function route(practice: Practice, request: ProRequest): Promise<void> {
  const { req, res, segments } = request;
  const method = req.method ?? 'GET';
  const path = segments.join('/');
  const [first, second, third] = segments;
  const allow = (methods: string): void => {
    res.writeHead(405, { allow: methods, 'content-length': 0 });
    res.end();
  };

  if (path === 'patients') return method === 'GET' ? listPatients(practice, request) : allow('GET');
  if (first === 'patients' && second !== undefined && third === 'appointments' && segments.length === 3) {
    return method === 'GET' ? patientAppointments(practice, request, second) : allow('GET');
  }
  if (path === 'event-types') {
    return method === 'GET'
      ? page(
          request,
          practice.eventTypes.rows.map(({ eventTypeId, name }) => ({ eventTypeId, name })),
        )
      : allow('GET');
  }
  if (path === 'scheduling/availability/providers') return method === 'GET' ? availableProviders(practice, request) : allow('GET');
  if (path === 'scheduling/availability/slots') return method === 'GET' ? availableSlots(practice, request) : allow('GET');
  if (path === 'appointments') return method === 'POST' ? book(practice, request) : allow('POST');
  if (path === 'waitlist') return method === 'POST' ? addToWaitlist(practice, request) : allow('POST');
  if (first === 'waitlist' && second !== undefined && segments.length === 2) {
    return method === 'GET' ? getWaitlistEntry(practice, res, second) : allow('GET');
  }
  if (path === 'waitlist-slots') return method === 'GET' ? page(request, practice.waitlistSlots.rows) : allow('GET');
  if (first === 'waitlist-slots' && second !== undefined && third === 'close' && segments.length === 3) {
    return method === 'PUT' ? closeSlot(practice, request, second) : allow('PUT');
  }
  fail(res, 404, 'No such resource');
}

/** Page and Limit, or the 400 already sent. */
function paging(request: ProRequest): { page: number; limit: number } | undefined {
  const query = new Query(request.url.searchParams);
  const pageText = query.get('Page');
  const limitText = query.get('Limit');
  const page = pageText === undefined ? 1 : parseInteger(pageText, 1);
  const limit = limitText === undefined ? PRO_DEFAULT_LIMIT : parseInteger(limitText, 1);
  if (page === undefined || limit === undefined) {
    fail(request.res, 400, 'Page and Limit must be positive integers');
    return undefined;
  }
  return { page, limit: Math.min(limit, PRO_MAX_LIMIT) };
}

function page(request: ProRequest, rows: readonly unknown[]): void {
  const p = paging(request);
  if (p === undefined) return;
  const offset = (p.page - 1) * p.limit;
  sendJson(request.res, 200, { data: rows.slice(offset, offset + p.limit) });
}

/** Phone digits without a leading US country code. */
function digits(text: string): string {
  const all = text.replace(/\D/g, '');
  return all.length === 11 && all.startsWith('1') ? all.slice(1) : all;
}

function listPatients(practice: Practice, request: ProRequest): void {
  const query = new Query(request.url.searchParams);
  const checks: Array<(p: ProPatient) => boolean> = [];
  const keys: string[] = [];
  for (const field of ['FirstName', 'LastName'] as const) {
    const value = query.get(field)?.toLowerCase();
    if (value === undefined) continue;
    const member = field === 'FirstName' ? 'firstName' : 'lastName';
    checks.push((p) => p[member].toLowerCase() === value);
    keys.push(`${field}=${value}`);
  }
  const dob = query.get('DOB');
  if (dob !== undefined) {
    if (parseDateOnly(dob) === undefined) return fail(request.res, 400, 'DOB must be a date YYYY-MM-DD');
    checks.push((p) => p.dob === dob);
    keys.push(`dob=${dob}`);
  }
  const cell = query.get('CellPhone');
  if (cell !== undefined) {
    const wanted = digits(cell);
    if (wanted === '') return fail(request.res, 400, 'CellPhone must contain digits');
    checks.push((p) => digits(p.cellPhone) === wanted);
    keys.push(`cell=${wanted}`);
  }
  const rows =
    checks.length === 0 ? practice.patients.rows : patientListing(practice, keys.join('&'), (p) => checks.every((check) => check(p)));
  page(request, rows);
}

const patientListings = new WeakMap<Practice, Map<string, { version: number; rows: ProPatient[] }>>();

/** Filtered patients, cached per filter until the patients change. */
function patientListing(practice: Practice, key: string, match: (p: ProPatient) => boolean): ProPatient[] {
  let cache = patientListings.get(practice);
  if (cache === undefined) {
    cache = new Map();
    patientListings.set(practice, cache);
  }
  const hit = cache.get(key);
  if (hit !== undefined && hit.version === practice.patients.version) return hit.rows;
  const rows = practice.patients.rows.filter(match);
  if (cache.size >= PATIENT_LISTINGS) cache.clear();
  cache.set(key, { version: practice.patients.version, rows });
  return rows;
}

function patientAppointments(practice: Practice, request: ProRequest, idText: string): void {
  const patientId = parseInteger(idText, 1);
  if (patientId === undefined || practice.patients.get(patientId) === undefined) {
    return fail(request.res, 404, 'No such patient');
  }
  const appointments = practice.appointmentsOf(patientId);
  page(
    request,
    practice.appointmentFields === 'spec' ? appointments.map(({ appointmentId, apptDate }) => ({ appointmentId, apptDate })) : appointments,
  );
}

function requiredId(request: ProRequest, name: string, required: boolean): number | null | undefined {
  const text = new Query(request.url.searchParams).get(name);
  if (text === undefined) {
    if (!required) return null;
    fail(request.res, 400, `${name} is required`);
    return undefined;
  }
  const value = parseInteger(text, 1);
  if (value === undefined) fail(request.res, 400, `${name} must be a positive integer`);
  return value;
}

function availableProviders(practice: Practice, request: ProRequest): void {
  const eventTypeId = requiredId(request, 'EventTypeId', true);
  if (eventTypeId === undefined || eventTypeId === null) return;
  const facility = requiredId(request, 'serviceFacilityId', false);
  if (facility === undefined) return;
  const providers = practice.providersFor(eventTypeId).filter((p) => facility === null || p.serviceFacilityId === facility);
  page(
    request,
    providers.map(({ providerId, firstName, lastName }) => ({ provider: { providerId, firstName, lastName } })),
  );
}

function availableSlots(practice: Practice, request: ProRequest): void {
  const eventTypeId = requiredId(request, 'EventTypeId', true);
  if (eventTypeId === undefined || eventTypeId === null) return;
  const providerId = requiredId(request, 'ProviderId', false);
  if (providerId === undefined) return;
  const query = new Query(request.url.searchParams);
  const [startText, endText] = [query.get('Start'), query.get('End')];
  if (startText === undefined || endText === undefined) return fail(request.res, 400, 'Start and End are required');
  const [start, end] = [parseDateOnly(startText), parseDateOnly(endText)];
  if (start === undefined || end === undefined) return fail(request.res, 400, 'Start and End must be dates YYYY-MM-DD');
  if (end < start) return fail(request.res, 400, 'End must not be before Start');
  if (end - start > MAX_SLOT_RANGE_DAYS) return fail(request.res, 400, `Start..End may span at most ${MAX_SLOT_RANGE_DAYS} days`);
  const providers = practice.providersFor(eventTypeId).filter((p) => providerId === null || p.providerId === providerId);
  page(
    request,
    providers.map((p) => ({ providerId: p.providerId, slots: practice.openSlots(p.providerId, start, end) })),
  );
}

async function jsonBody(request: ProRequest): Promise<Record<string, unknown> | undefined> {
  const body = await readJson(request.req);
  if (!body.ok) {
    fail(request.res, 400, body.message);
    return undefined;
  }
  if (!isRecord(body.value)) {
    fail(request.res, 400, 'The body must be a JSON object');
    return undefined;
  }
  return body.value;
}

const isId = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0;

async function book(practice: Practice, request: ProRequest): Promise<void> {
  const body = await jsonBody(request);
  if (body === undefined) return;
  const { patientId, eventTypeId, providerId, apptDate } = body;
  if (!isId(patientId) || !isId(eventTypeId) || !isId(providerId) || typeof apptDate !== 'string') {
    return fail(request.res, 400, 'patientId, eventTypeId and providerId (integers) and apptDate are required');
  }
  if (practice.patients.get(patientId) === undefined) return fail(request.res, 400, 'Unknown patientId');
  if (practice.eventTypes.get(eventTypeId) === undefined) return fail(request.res, 400, 'Unknown eventTypeId');
  const provider = practice.providers.get(providerId);
  if (provider === undefined || !provider.eventTypeIds.includes(eventTypeId)) {
    return fail(request.res, 400, 'The provider does not offer this event type');
  }
  if (!practice.isGridTime(apptDate)) return fail(request.res, 400, 'apptDate is not a slot time');
  if (!practice.isOpen(providerId, apptDate)) return fail(request.res, 409, 'The slot is not available');
  const appointment: ProAppointment = practice.create('appointments', { patientId, eventTypeId, providerId, apptDate });
  sendJson(request.res, 201, { ...appointment });
}

const DAYS_PATTERN = new RegExp(`^(${DAY_NAMES.join('|')})(,(${DAY_NAMES.join('|')}))*$`);
const TIMES_PATTERN = new RegExp(`^(${TIMES_OF_DAY.join('|')})(,(${TIMES_OF_DAY.join('|')}))*$`);

async function addToWaitlist(practice: Practice, request: ProRequest): Promise<void> {
  const body = await jsonBody(request);
  if (body === undefined) return;
  const { patientId, eventTypeId, providerIds, daysOfWeek, timesOfDay, dateRangeStart, dateRangeEnd, comments } = body;
  const res = request.res;
  if (!isId(patientId) || practice.patients.get(patientId) === undefined) return fail(res, 400, 'patientId must name a patient');
  if (!isId(eventTypeId) || practice.eventTypes.get(eventTypeId) === undefined)
    return fail(res, 400, 'eventTypeId must name an event type');
  if (!Array.isArray(providerIds) || !providerIds.every((id) => isId(id) && practice.providers.get(id) !== undefined)) {
    return fail(res, 400, 'providerIds must be an array of provider ids');
  }
  if (typeof daysOfWeek !== 'string' || !DAYS_PATTERN.test(daysOfWeek)) {
    return fail(res, 400, 'daysOfWeek must be full day names joined by commas, no spaces');
  }
  if (typeof timesOfDay !== 'string' || !TIMES_PATTERN.test(timesOfDay)) {
    return fail(res, 400, `timesOfDay must be ${TIMES_OF_DAY.join(', ')} (comma-joined)`);
  }
  const start = optionalDate(dateRangeStart);
  const end = optionalDate(dateRangeEnd);
  if (start === undefined || end === undefined) return fail(res, 400, 'dateRangeStart and dateRangeEnd must be dates YYYY-MM-DD');
  if (start !== null && end !== null && end < start) return fail(res, 400, 'dateRangeEnd must not be before dateRangeStart');
  if (comments !== undefined && comments !== null && typeof comments !== 'string') return fail(res, 400, 'comments must be a string');
  const entry: ProWaitlistEntry = practice.create('waitlist', {
    patientId,
    eventTypeId,
    providerIds: providerIds as number[],
    daysOfWeek,
    timesOfDay,
    dateRangeStart: start === null ? null : dayToDate(start),
    dateRangeEnd: end === null ? null : dayToDate(end),
    comments: typeof comments === 'string' ? comments : '',
  });
  sendJson(res, 201, { waitlistId: entry.waitlistId });
}

/** null when absent, undefined when invalid, else the epoch day. */
function optionalDate(value: unknown): number | null | undefined {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? parseDateOnly(value) : undefined;
}

function getWaitlistEntry(practice: Practice, res: ServerResponse, idText: string): void {
  const id = parseInteger(idText, 1);
  const entry = id === undefined ? undefined : practice.waitlist.get(id);
  if (entry === undefined) return fail(res, 404, 'No such waitlist entry');
  const patient = practice.patients.get(entry.patientId);
  const eventType = practice.eventTypes.get(entry.eventTypeId);
  sendJson(res, 200, {
    waitlistId: entry.waitlistId,
    patient:
      patient === undefined
        ? { patientId: entry.patientId, firstName: null, lastName: null }
        : { patientId: patient.patientId, firstName: patient.firstName, lastName: patient.lastName },
    eventType: { eventTypeId: entry.eventTypeId, name: eventType?.name ?? null },
    dateFrom: entry.dateRangeStart,
    dateTo: entry.dateRangeEnd,
    providerIds: entry.providerIds,
    daysOfWeek: entry.daysOfWeek,
    timesOfDay: entry.timesOfDay,
    comments: entry.comments,
  });
}

async function closeSlot(practice: Practice, request: ProRequest, idText: string): Promise<void> {
  const id = parseInteger(idText, 1);
  const slot = id === undefined ? undefined : practice.waitlistSlots.get(id);
  if (slot === undefined) return fail(request.res, 404, 'No such waitlist slot');
  const body = await jsonBody(request);
  if (body === undefined) return;
  const status = body.status;
  if (status !== 'filled' && status !== 'declined') return fail(request.res, 400, 'status must be filled or declined');
  if (slot.status !== 'offered') return fail(request.res, 409, `The slot is already ${slot.status}`);
  const closed = practice.update('waitlistSlots', slot.waitlistSlotId, { status: status satisfies WaitlistSlotStatus });
  sendJson(request.res, 200, { ...closed });
}
