// Glossary
// - tenant: one Core or Subset account, reached with its gateway apikey.
// - practice: one Pro account, reached with its bare token.
// - resource: a Core list endpoint (customers, orders, ...).
// - listing: the filtered, ordered positions of one resource for one filter
//   combination; cached and kept current as records change.
// - quota day: the 24 hours between two quota resets of one apikey.
// - event: a Patient/Appointment/Order Created/Updated notification; a
//   delivery is one event sent to one registration, in one or more attempts.
// - fault: a deliberate failure injected by setFaults.

export const CORE_RESOURCES = [
  'companies',
  'customers',
  'appointments',
  'orders',
  'memberships',
  'membershipprograms',
  'giftcertificates',
  'products',
  'services',
  'employees',
] as const;
export type CoreResource = (typeof CORE_RESOURCES)[number];

export function isCoreResource(name: string): name is CoreResource {
  return (CORE_RESOURCES as readonly string[]).includes(name);
}

export const SUBSET_RESOURCES = ['companies', 'appointments', 'orders', 'employees', 'services'] as const satisfies readonly CoreResource[];

export const EVENT_NAMES = [
  'Patient.Created',
  'Patient.Updated',
  'Appointment.Created',
  'Appointment.Updated',
  'Order.Created',
  'Order.Updated',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** A Core record exactly as served: PascalCase members, opaque string ids. */
export type CoreRecord = Record<string, unknown>;

export interface CoreTenantOptions {
  apikey: string;
  username: string;
  password: string;
  variant: 'core' | 'subset';
  /** Subset tenants live under /CustomAPI/<subsetName>/api/v1. */
  subsetName?: string;
  /** The tenant part of webhook TenantId "<node>_<tenantId>". */
  tenantId?: string;
  sizes?: Partial<Record<CoreResource, number>>;
  /** Data* paging headers; giftcertificates never sends them. Default true. */
  dataHeaders?: boolean | Partial<Record<CoreResource, boolean>>;
  /** Requests per quota day. Default 1000; 0 or Infinity means unlimited. */
  dailyQuota?: number;
  /** UTC hour at which the quota day starts. Default 0. */
  quotaResetHourUtc?: number;
  /** IANA zone of timestamp strings and filter values. Default 'UTC'. */
  timeZone?: string;
  /**
   * Serve fields under other names, as a server whose names differ from this
   * contract would: `{ appointments: { StartDateTime: 'StartTime' } }`.
   */
  fieldNames?: Partial<Record<CoreResource, Record<string, string>>>;
}

export interface ProPracticeOptions {
  token: string;
  practiceId: number;
  /**
   * What GET /patients/{id}/appointments returns per appointment: every stored
   * field (default), or only the fields the spec shows for that call
   * (appointmentId and apptDate).
   */
  appointmentFields?: 'all' | 'spec';
  sizes?: {
    patients?: number;
    appointmentsPerPatient?: number;
    eventTypes?: number;
    providers?: number;
    waitlist?: number;
    waitlistSlots?: number;
  };
}

export interface WebhookTiming {
  attemptTimeoutMs: number;
  retryIntervalMs: number;
  maxAttempts: number;
}

export interface SimulatorOptions {
  host?: string;
  port?: number;
  seed?: number;
  now?: () => Date;
  /**
   * Waits out slowMs and hangMs; real timers by default. The wait ends early,
   * resolved or rejected, when `signal` aborts (the simulator closes). Tests
   * pass their own to see the waits without spending them.
   */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  tenants?: CoreTenantOptions[];
  practices?: ProPracticeOptions[];
  webhookTiming?: Partial<WebhookTiming>;
  /** Newest request log entries kept for stats(). Default 200,000. */
  requestLogLimit?: number;
}

export interface Faults {
  /**
   * Only Core/Subset requests carrying this gateway apikey: the faults replace
   * the global ones for that key (one failing practice among healthy ones).
   * `{ apikey }` alone clears them, so the key follows the global faults again.
   */
  apikey?: string;
  /** Fraction of requests answered 500, 502 or 503 with an empty or non-JSON body. */
  errorRate?: number;
  /** Fraction of requests that hang for hangMs before being served. */
  timeoutRate?: number;
  /** How long a timed-out request hangs. Default 30,000 ms. */
  hangMs?: number;
  /** Fraction of requests whose socket is destroyed without a response. */
  resetRate?: number;
  /** Latency added to every request. */
  slowMs?: number;
  /** The next N requests get 500. */
  failNext?: number;
  /** Core/Subset requests get 429 after N more of them. */
  quotaExhaustAfter?: number;
  /** After each list page of `resource`, update `count` records of that page. */
  mutateBetweenPages?: { resource: CoreResource; count: number };
  /** Retry-After seconds sent with injected 503s. */
  retryAfterSeconds?: number;
}

export type FaultKind = 'error' | 'timeout' | 'reset' | 'failNext' | 'quotaExhausted';
export type ApiKind = 'core' | 'subset' | 'pro' | 'unknown';

export interface RequestLogEntry {
  at: Date;
  api: ApiKind;
  apikey?: string;
  practiceId?: number;
  method: string;
  /** Path without the query string. */
  path: string;
  /** 0 when the socket was destroyed before a response. */
  status: number;
  fault?: FaultKind;
}

export interface ApikeyUsage {
  /** Authenticated requests, including those refused with 429. */
  requests: number;
  /** Requests refused with 429 (not counted against the quota). */
  rejected: number;
  /** Quota-counted requests per quota day, keyed by the day's UTC date. */
  byQuotaDay: Record<string, number>;
  quotaDay: string;
  usedToday: number;
  /** null when unlimited. */
  dailyQuota: number | null;
}

export interface WebhookRegistration {
  Id: number;
  WebhookUrl: string;
  EventType: EventName;
}

export interface WebhookPayload {
  Application: string;
  TenantId: string;
  EventId: string;
  EventType: EventName;
  EventTimestamp: string;
  Url: string;
}

export interface WebhookAttempt {
  eventId: string;
  eventType: EventName;
  apikey: string;
  webhookId: number;
  webhookUrl: string;
  attempt: number;
  at: Date;
  durationMs: number;
  /** HTTP status, absent when the attempt failed before a response. */
  status?: number;
  error?: string;
  ok: boolean;
}

export interface WebhookDelivery {
  eventId: string;
  eventType: EventName;
  apikey: string;
  webhookId: number;
  webhookUrl: string;
  payload: WebhookPayload;
  attempts: number;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
}

export interface SimulatorStats {
  requests: RequestLogEntry[];
  /** Older entries dropped once the log reached requestLogLimit. */
  requestsDropped: number;
  byApikey: Record<string, ApikeyUsage>;
  webhookAttempts: WebhookAttempt[];
  webhookDeliveries: WebhookDelivery[];
}

export interface ListOptions {
  offset?: number;
  limit?: number;
}

export interface TenantHandle {
  readonly apikey: string;
  readonly variant: 'core' | 'subset';
  readonly resources: readonly CoreResource[];
  /** Live (not removed) records of a resource. */
  count(resource: CoreResource): number;
  /** Live records in list order, exactly as served. */
  list(resource: CoreResource, options?: ListOptions): CoreRecord[];
  get(resource: CoreResource, id: string): CoreRecord | undefined;
  /** Adds a generated record, overlaid with `partial`; fires *.Created. */
  create(resource: CoreResource, partial?: CoreRecord): CoreRecord;
  /** Overlays `patch` and stamps ModifiedOn = now(); fires *.Updated. Throws if missing. */
  update(resource: CoreResource, id: string, patch?: CoreRecord): CoreRecord;
  /** Updates `count` seeded-random live records; returns them. */
  touch(resource: CoreResource, count: number): CoreRecord[];
  /** The record is no longer served. False when it did not exist. */
  remove(resource: CoreResource, id: string): boolean;
  /** From now on serve these fields under other names (replacing earlier renames; {} restores the contract's names). */
  renameFields(resource: CoreResource, names: Record<string, string>): void;
  webhooks(): WebhookRegistration[];
}

export interface ProPatient {
  patientId: number;
  firstName: string;
  lastName: string;
  dob: string;
  cellPhone: string;
}
export interface ProAppointment {
  appointmentId: number;
  apptDate: string;
  patientId: number;
  eventTypeId: number;
  providerId: number;
}
export interface ProEventType {
  eventTypeId: number;
  name: string;
  durationMinutes: number;
}
export interface ProProvider {
  providerId: number;
  firstName: string;
  lastName: string;
  serviceFacilityId: number;
  eventTypeIds: number[];
}
export interface ProWaitlistEntry {
  waitlistId: number;
  patientId: number;
  eventTypeId: number;
  providerIds: number[];
  daysOfWeek: string;
  timesOfDay: string;
  dateRangeStart: string | null;
  dateRangeEnd: string | null;
  comments: string;
}
export type WaitlistSlotStatus = 'offered' | 'filled' | 'declined';
export interface ProWaitlistSlot {
  waitlistSlotId: number;
  waitlistId: number;
  providerId: number;
  eventTypeId: number;
  slotDate: string;
  status: WaitlistSlotStatus;
}

export interface ProRecords {
  patients: ProPatient;
  appointments: ProAppointment;
  eventTypes: ProEventType;
  providers: ProProvider;
  waitlist: ProWaitlistEntry;
  waitlistSlots: ProWaitlistSlot;
}
export type ProResource = keyof ProRecords;

export interface PracticeHandle {
  readonly practiceId: number;
  readonly token: string;
  list<R extends ProResource>(resource: R): ProRecords[R][];
  get<R extends ProResource>(resource: R, id: number): ProRecords[R] | undefined;
  /** Adds a generated record overlaid with `partial` (its id is always assigned). */
  create<R extends ProResource>(resource: R, partial?: Partial<ProRecords[R]>): ProRecords[R];
  update<R extends ProResource>(resource: R, id: number, patch?: Partial<ProRecords[R]>): ProRecords[R];
  remove(resource: ProResource, id: number): boolean;
}

export interface Simulator {
  /** http://HOST:PORT */
  readonly url: string;
  coreBaseUrl(): string;
  subsetBaseUrl(name: string): string;
  proBaseUrl(): string;
  tenant(apikey: string): TenantHandle;
  practice(id: number): PracticeHandle;
  /** Replaces the active faults; counters and the fault random stream restart. */
  setFaults(faults: Faults): void;
  stats(): SimulatorStats;
  /** Resolves once no webhook delivery is pending (retries included). */
  webhooksSettled(): Promise<void>;
  close(): Promise<void>;
}
