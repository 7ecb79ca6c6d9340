import { IdCodec } from '../ids.ts';
import { combine, hashString, Rng } from '../random.ts';
import { TenantClock } from '../time.ts';
import type { CoreRecord, CoreResource, CoreTenantOptions, EventName, ListOptions, TenantHandle, WebhookRegistration } from '../types.ts';
import { CORE_RESOURCES, SUBSET_RESOURCES } from '../types.ts';
import { pickBrand, RESOURCE_DEFS } from './resources.ts';
import { ResourceStore } from './store.ts';

// One Core or Subset account: its credentials, quota settings, record stores
// and webhook registrations, plus the handle tests use to read and change it.

export const DEFAULT_DAILY_QUOTA = 1000;

/** Where record events go; the simulator wires this to webhook delivery. */
export interface EventSink {
  emit(tenant: Tenant, eventType: EventName, recordPath: string): void;
}

export interface TenantEnv {
  readonly seed: number;
  readonly anchorDay: number;
  readonly now: () => Date;
  readonly sink: EventSink;
}

export class Tenant {
  readonly apikey: string;
  readonly variant: 'core' | 'subset';
  readonly subsetName: string | undefined;
  readonly tenantId: string;
  /** null when unlimited. */
  readonly dailyQuota: number | null;
  readonly quotaResetHourUtc: number;
  readonly clock: TenantClock;
  readonly resources: readonly CoreResource[];
  readonly registrations = new Map<number, WebhookRegistration>();
  private readonly expectedBasic: string;
  private readonly dataHeaderSetting: CoreTenantOptions['dataHeaders'];
  private readonly stores = new Map<CoreResource, ResourceStore>();
  private readonly env: TenantEnv;
  private readonly touchRng: Rng;

  constructor(options: CoreTenantOptions, position: number, env: TenantEnv) {
    if (options.variant === 'subset' && !options.subsetName) {
      throw new Error(`subset tenant ${options.apikey} needs a subsetName`);
    }
    if (options.username.includes(':')) throw new Error('a username must not contain a colon');
    if (options.dailyQuota !== undefined && !(options.dailyQuota >= 0)) throw new Error('dailyQuota must be 0 or more');
    const resetHour = options.quotaResetHourUtc;
    if (resetHour !== undefined && !(Number.isInteger(resetHour) && resetHour >= 0 && resetHour <= 23)) {
      throw new Error('quotaResetHourUtc must be an integer hour from 0 to 23');
    }
    for (const [resource, size] of Object.entries(options.sizes ?? {})) {
      if (!(Number.isInteger(size) && size >= 0)) throw new Error(`sizes.${resource} must be a non-negative integer`);
    }
    this.apikey = options.apikey;
    this.variant = options.variant;
    this.subsetName = options.subsetName;
    this.tenantId = options.tenantId ?? String(1000 + position);
    const quota = options.dailyQuota ?? DEFAULT_DAILY_QUOTA;
    this.dailyQuota = quota === 0 || quota === Infinity ? null : quota;
    this.quotaResetHourUtc = options.quotaResetHourUtc ?? 0;
    this.clock = new TenantClock(options.timeZone ?? 'UTC');
    this.expectedBasic = Buffer.from(`${options.username}:${options.password}`, 'utf8').toString('base64');
    this.dataHeaderSetting = options.dataHeaders;
    this.env = env;
    this.resources = this.variant === 'core' ? CORE_RESOURCES : SUBSET_RESOURCES;

    const tenantKey = combine(env.seed, hashString(options.apikey));
    this.touchRng = new Rng(combine(tenantKey, 0x70c4));
    const sizes = options.sizes ?? {};
    const seededSize = (resource: CoreResource): number => sizes[resource] ?? RESOURCE_DEFS[resource].defaultSize;
    const ctx = {
      ids: new IdCodec(tenantKey),
      clock: this.clock,
      anchorDay: env.anchorDay,
      brand: pickBrand(new Rng(combine(tenantKey, 0xb7a2d))),
      tenantKey,
      seededSize,
    };
    for (const resource of this.resources) {
      const store = new ResourceStore(RESOURCE_DEFS[resource], ctx, seededSize(resource));
      store.renames = { ...options.fieldNames?.[resource] };
      this.stores.set(resource, store);
    }
  }

  store(resource: string): ResourceStore | undefined {
    return this.stores.get(resource as CoreResource);
  }

  dataHeaders(resource: CoreResource): boolean {
    if (resource === 'giftcertificates') return false;
    const setting = this.dataHeaderSetting;
    if (setting === undefined || typeof setting === 'boolean') return setting ?? true;
    return setting[resource] ?? true;
  }

  /** `token` is the Base64 part of a Basic header or the api_key parameter. */
  credentialsMatch(token: string): boolean {
    return token === this.expectedBasic || (token.length > 0 && token === this.expectedBasic.replace(/=+$/, ''));
  }

  webhookList(): WebhookRegistration[] {
    return [...this.registrations.values()].map((r) => ({ ...r }));
  }

  create(resource: CoreResource, partial?: CoreRecord): CoreRecord {
    const store = this.required(resource);
    const index = store.create(partial, this.env.now().getTime());
    const record = store.record(index);
    this.emit(store, index, 'Created');
    return record;
  }

  update(resource: CoreResource, index: number, patch?: CoreRecord): CoreRecord {
    const store = this.required(resource);
    store.update(index, patch, this.env.now().getTime());
    this.emit(store, index, 'Updated');
    return store.record(index);
  }

  /** Seeded-random distinct live records. */
  sample(resource: CoreResource, count: number): number[] {
    const store = this.required(resource);
    const wanted = Math.min(Math.max(0, Math.floor(count)), store.live);
    const chosen = new Set<number>();
    let attempts = 0;
    while (chosen.size < wanted && attempts < wanted * 20) {
      attempts++;
      const index = this.touchRng.int(store.size);
      if (store.isLive(index)) chosen.add(index);
    }
    for (let i = 0; chosen.size < wanted && i < store.size; i++) if (store.isLive(i)) chosen.add(i);
    return [...chosen];
  }

  handle(): TenantHandle {
    const list = (resource: CoreResource, options: ListOptions = {}): CoreRecord[] => {
      const store = this.required(resource);
      const listing = store.listing({ key: '' });
      const offset = Math.max(0, options.offset ?? 0);
      const end = Math.min(listing.total, offset + (options.limit ?? listing.total));
      const out: CoreRecord[] = [];
      for (let p = offset; p < end; p++) out.push(store.record(listing.at(p)));
      return out;
    };
    const find = (resource: CoreResource, id: string): number => {
      const index = this.required(resource).indexOf(id);
      if (index < 0) throw new Error(`no ${resource} record ${id}`);
      return index;
    };
    return {
      apikey: this.apikey,
      variant: this.variant,
      resources: this.resources,
      count: (resource) => this.required(resource).live,
      list,
      get: (resource, id) => {
        const store = this.required(resource);
        const index = store.indexOf(id);
        return index < 0 ? undefined : store.record(index);
      },
      create: (resource, partial) => this.create(resource, partial),
      update: (resource, id, patch) => this.update(resource, find(resource, id), patch),
      touch: (resource, count) => this.sample(resource, count).map((index) => this.update(resource, index)),
      renameFields: (resource, names) => {
        this.required(resource).renames = { ...names };
      },
      remove: (resource, id) => {
        const store = this.required(resource);
        const index = store.indexOf(id);
        if (index < 0) return false;
        store.remove(index);
        return true;
      },
      webhooks: () => this.webhookList(),
    };
  }

  private required(resource: CoreResource): ResourceStore {
    const store = this.stores.get(resource);
    if (store === undefined) throw new Error(`${resource} is not served to ${this.variant} tenant ${this.apikey}`);
    return store;
  }

  private emit(store: ResourceStore, index: number, change: 'Created' | 'Updated'): void {
    const event = store.def.event;
    if (event === undefined || this.variant !== 'core') return;
    this.env.sink.emit(this, `${event.name}.${change}`, event.path(store.idOf(index)));
  }
}
