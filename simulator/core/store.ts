import type { IdCodec } from '../ids.ts';
import { combine, Rng } from '../random.ts';
import type { TenantClock } from '../time.ts';
import type { CoreRecord, CoreResource } from '../types.ts';
import type { Gen, ResourceDef } from './resources.ts';

// Records of one resource of one tenant, stored as columns: creation and
// modification instants, a removed flag, and a sparse map of field overrides.
// Everything else is regenerated from the seed on demand. Listings (filtered
// positions) are cached per filter and patched in place on every mutation, so
// paging stays O(page) even while records change underneath.

const DAY_MS = 86_400_000;
const SEEDED_HISTORY_DAYS = 1095;
const MAX_LISTINGS = 16;
const ID_CACHE_LIMIT = 4096;
const RESERVED_FIELDS = new Set(['CreatedOn', 'ModifiedOn']);

export interface StoreContext {
  readonly ids: IdCodec;
  readonly clock: TenantClock;
  readonly anchorDay: number;
  readonly brand: string;
  readonly tenantKey: number;
  /** Seeded record count of a resource, used to draw references. */
  seededSize(resource: CoreResource): number;
}

export interface ListFilter {
  /** Canonical text of the filter, the listing cache key. */
  readonly key: string;
  readonly modifiedFromMs?: number;
  readonly modifiedToMs?: number;
  /** Field predicate; only when a filter needs record fields. */
  readonly match?: (fields: Record<string, unknown>) => boolean;
}

/** Ordered record indexes matching one filter. */
export interface Listing {
  readonly total: number;
  at(position: number): number;
}

class GenState implements Gen {
  readonly rng = new Rng(0);
  index = 0;
  createdMs = 0;
  readonly anchorDay: number;
  readonly clock: TenantClock;
  readonly brand: string;
  private readonly ctx: StoreContext;
  /** Ids of referenced records; references mostly point at small catalogs (companies, services). */
  private readonly idCache = new Map<CoreResource, string[]>();

  constructor(ctx: StoreContext) {
    this.ctx = ctx;
    this.anchorDay = ctx.anchorDay;
    this.clock = ctx.clock;
    this.brand = ctx.brand;
  }

  pick(resource: CoreResource): number {
    const size = this.ctx.seededSize(resource);
    return size > 0 ? this.rng.int(size) : -1;
  }

  id(resource: CoreResource, index: number): string {
    if (index >= ID_CACHE_LIMIT) return this.ctx.ids.encode(kindOf(resource), index);
    let cache = this.idCache.get(resource);
    if (cache === undefined) {
      cache = [];
      this.idCache.set(resource, cache);
    }
    let id = cache[index];
    if (id === undefined) {
      id = this.ctx.ids.encode(kindOf(resource), index);
      cache[index] = id;
    }
    return id;
  }
}

const KINDS: Record<CoreResource, number> = {
  companies: 1,
  customers: 2,
  appointments: 3,
  orders: 4,
  memberships: 5,
  membershipprograms: 6,
  giftcertificates: 7,
  products: 8,
  services: 9,
  employees: 10,
};

export function kindOf(resource: CoreResource): number {
  return KINDS[resource];
}

class CachedListing implements Listing {
  readonly filter: ListFilter;
  /** null while the listing is every index of a store with no removals. */
  positions: Int32Array | null;
  length: number;
  private readonly store: ResourceStore;

  constructor(store: ResourceStore, filter: ListFilter, positions: Int32Array | null, length: number) {
    this.store = store;
    this.filter = filter;
    this.positions = positions;
    this.length = length;
  }

  get total(): number {
    return this.positions === null ? this.store.size : this.length;
  }

  at(position: number): number {
    return this.positions === null ? position : (this.positions[position] ?? -1);
  }

  /** Bring membership of `index` up to date after it changed. */
  refresh(index: number, member: boolean): void {
    if (this.positions === null) {
      if (member) return;
      this.materialize();
    }
    const positions = this.positions;
    if (positions === null) return;
    const at = lowerBound(positions, this.length, index);
    const present = at < this.length && positions[at] === index;
    if (member && !present) {
      if (this.length === positions.length) {
        const grown = new Int32Array(Math.max(16, positions.length * 2));
        grown.set(positions.subarray(0, this.length));
        this.positions = grown;
      }
      const target = this.positions ?? positions;
      target.copyWithin(at + 1, at, this.length);
      target[at] = index;
      this.length++;
    } else if (!member && present) {
      positions.copyWithin(at, at + 1, this.length);
      this.length--;
    }
  }

  private materialize(): void {
    const size = this.store.size;
    const positions = new Int32Array(Math.max(16, size));
    for (let i = 0; i < size; i++) positions[i] = i;
    this.positions = positions;
    this.length = size;
  }
}

function lowerBound(values: Int32Array, length: number, target: number): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] ?? 0) < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class ResourceStore {
  readonly def: ResourceDef;
  readonly kind: number;
  /** Allocated indexes, removed ones included. */
  size = 0;
  private removedCount = 0;
  private created: Float64Array;
  private modified: Float64Array;
  private removed: Uint8Array;
  private readonly overrides = new Map<number, Record<string, unknown>>();
  private readonly listings = new Map<string, CachedListing>();
  private readonly ctx: StoreContext;
  private readonly gen: GenState;
  private readonly recordSeed: number;
  /** Served name of a field, where it differs from the contract's. */
  renames: Record<string, string> = {};

  constructor(def: ResourceDef, ctx: StoreContext, seeded: number) {
    this.def = def;
    this.kind = kindOf(def.name);
    this.ctx = ctx;
    this.gen = new GenState(ctx);
    this.recordSeed = combine(ctx.tenantKey, this.kind);
    const capacity = Math.max(16, seeded);
    this.created = new Float64Array(capacity);
    this.modified = new Float64Array(capacity);
    this.removed = new Uint8Array(capacity);
    this.seed(seeded);
  }

  /** Seeded records are created over the three years before the anchor day, in index order. */
  private seed(count: number): void {
    const rng = new Rng(combine(this.recordSeed, 0x5eed));
    const start = (this.ctx.anchorDay - SEEDED_HISTORY_DAYS) * DAY_MS;
    const end = this.ctx.anchorDay * DAY_MS - 3_600_000;
    const step = count > 0 ? (end - start) / count : 0;
    for (let i = 0; i < count; i++) {
      const created = toSecond(start + (i + rng.next()) * step);
      this.created[i] = created;
      this.modified[i] = rng.next() < 0.5 ? created : toSecond(created + rng.next() * (end - created));
    }
    this.size = count;
  }

  get live(): number {
    return this.size - this.removedCount;
  }

  isLive(index: number): boolean {
    return index >= 0 && index < this.size && this.removed[index] === 0;
  }

  idOf(index: number): string {
    return this.ctx.ids.encode(this.kind, index);
  }

  /** Index of a live record, or -1. */
  indexOf(id: string): number {
    const index = this.ctx.ids.decode(this.kind, id);
    return this.isLive(index) ? index : -1;
  }

  /** Record fields without the id and timestamps: generated, then overridden. */
  fields(index: number): Record<string, unknown> {
    const g = this.gen;
    g.index = index;
    g.createdMs = this.created[index] ?? 0;
    g.rng.reset(combine(this.recordSeed, index));
    const fields = this.def.generate(g);
    const override = this.overrides.get(index);
    if (override !== undefined) Object.assign(fields, override);
    return fields;
  }

  /** The record exactly as served. */
  record(index: number): CoreRecord {
    const record: CoreRecord = { [this.def.idField]: this.idOf(index) };
    Object.assign(record, this.fields(index));
    record.CreatedOn = this.ctx.clock.wall(this.created[index] ?? 0);
    record.ModifiedOn = this.ctx.clock.wall(this.modified[index] ?? 0);
    return Object.keys(this.renames).length === 0 ? record : renamed(record, this.renames);
  }

  create(partial: CoreRecord | undefined, nowMs: number): number {
    const index = this.size;
    if (index === this.created.length) this.grow();
    const stamp = toSecond(nowMs);
    this.created[index] = stamp;
    this.modified[index] = stamp;
    this.size++;
    const override = this.clean(partial);
    if (override !== undefined) this.overrides.set(index, override);
    this.changed(index);
    return index;
  }

  update(index: number, patch: CoreRecord | undefined, nowMs: number): void {
    const override = this.clean(patch);
    if (override !== undefined) this.overrides.set(index, { ...this.overrides.get(index), ...override });
    this.modified[index] = toSecond(nowMs);
    this.changed(index);
  }

  remove(index: number): void {
    this.removed[index] = 1;
    this.removedCount++;
    this.overrides.delete(index);
    this.changed(index);
  }

  /** The cached listing for `filter`, built by one scan on first use. */
  listing(filter: ListFilter): Listing {
    const cached = this.listings.get(filter.key);
    if (cached !== undefined) {
      this.listings.delete(filter.key);
      this.listings.set(filter.key, cached);
      return cached;
    }
    const listing = this.build(filter);
    this.listings.set(filter.key, listing);
    if (this.listings.size > MAX_LISTINGS) {
      const oldest = this.listings.keys().next().value;
      if (oldest !== undefined) this.listings.delete(oldest);
    }
    return listing;
  }

  private build(filter: ListFilter): CachedListing {
    if (isUnfiltered(filter) && this.removedCount === 0) return new CachedListing(this, filter, null, 0);
    let positions = new Int32Array(1024);
    let length = 0;
    for (let i = 0; i < this.size; i++) {
      if (!this.matches(i, filter)) continue;
      if (length === positions.length) {
        const grown = new Int32Array(positions.length * 2);
        grown.set(positions);
        positions = grown;
      }
      positions[length++] = i;
    }
    return new CachedListing(this, filter, positions, length);
  }

  private matches(index: number, filter: ListFilter): boolean {
    if (this.removed[index] !== 0) return false;
    const modified = this.modified[index] ?? 0;
    if (filter.modifiedFromMs !== undefined && modified < filter.modifiedFromMs) return false;
    if (filter.modifiedToMs !== undefined && modified > filter.modifiedToMs) return false;
    return filter.match === undefined || filter.match(this.fields(index));
  }

  private changed(index: number): void {
    for (const listing of this.listings.values()) listing.refresh(index, this.matches(index, listing.filter));
  }

  private clean(patch: CoreRecord | undefined): Record<string, unknown> | undefined {
    if (patch === undefined) return undefined;
    const out: Record<string, unknown> = {};
    let any = false;
    for (const [key, value] of Object.entries(patch)) {
      if (key === this.def.idField || RESERVED_FIELDS.has(key) || value === undefined) continue;
      out[key] = value;
      any = true;
    }
    return any ? out : undefined;
  }

  private grow(): void {
    const capacity = this.created.length * 2;
    const created = new Float64Array(capacity);
    created.set(this.created);
    this.created = created;
    const modified = new Float64Array(capacity);
    modified.set(this.modified);
    this.modified = modified;
    const removed = new Uint8Array(capacity);
    removed.set(this.removed);
    this.removed = removed;
  }
}

function isUnfiltered(filter: ListFilter): boolean {
  return filter.modifiedFromMs === undefined && filter.modifiedToMs === undefined && filter.match === undefined;
}

function renamed(record: CoreRecord, names: Record<string, string>): CoreRecord {
  const out: CoreRecord = {};
  for (const [key, value] of Object.entries(record)) out[names[key] ?? key] = value;
  return out;
}

function toSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}
