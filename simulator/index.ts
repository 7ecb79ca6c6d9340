import { SimulatorServer } from './server.ts';
import type { CoreTenantOptions, ProPracticeOptions, Simulator, SimulatorOptions } from './types.ts';

// The local simulator of the Core, Subset and Pro APIs (see
// docs/simulator-contract.md for the choices it makes where the spec is silent).

export type {
  ApikeyUsage,
  CoreRecord,
  CoreResource,
  CoreTenantOptions,
  EventName,
  Faults,
  FaultKind,
  ListOptions,
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
  RequestLogEntry,
  Simulator,
  SimulatorOptions,
  SimulatorStats,
  TenantHandle,
  WaitlistSlotStatus,
  WebhookAttempt,
  WebhookDelivery,
  WebhookPayload,
  WebhookRegistration,
  WebhookTiming,
} from './types.ts';
export { CORE_RESOURCES, EVENT_NAMES, isCoreResource, SUBSET_RESOURCES } from './types.ts';
export { DEFAULT_WEBHOOK_TIMING, WEBHOOK_APPLICATION, WEBHOOK_NODE_PREFIX } from './webhooks.ts';

/** Fixed, fake credentials of the simulator's default accounts. */
export const DEMO_CORE = {
  apikey: 'demo-core-apikey',
  username: 'demo.user',
  password: 'demo-password',
  variant: 'core',
} as const satisfies CoreTenantOptions;

export const DEMO_SUBSET = {
  apikey: 'demo-subset-apikey',
  username: 'demo.subset',
  password: 'demo-subset-password',
  variant: 'subset',
  subsetName: 'DemoSubset',
} as const satisfies CoreTenantOptions;

export const DEMO_PRO = {
  token: 'demo-pro-token',
  practiceId: 4242,
} as const satisfies ProPracticeOptions;

export const DEFAULT_HOST = '127.0.0.1';

/**
 * Starts the simulator. Without `tenants` it serves the DEMO_CORE and
 * DEMO_SUBSET accounts; without `practices`, the DEMO_PRO practice.
 */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const tenants = options.tenants ?? [{ ...DEMO_CORE }, { ...DEMO_SUBSET }];
  const practices = options.practices ?? [{ ...DEMO_PRO }];
  const server = new SimulatorServer(options, tenants, practices);
  await server.listen(options.host ?? DEFAULT_HOST, options.port ?? 0);
  return server;
}
