/**
 * What differs between the three kinds of source beyond their streams: how
 * to check that a source answers, and what to tell an operator whose
 * credentials are refused. (Webhooks exist only for Core; `pmsync webhooks`
 * refuses Subset and Pro sources.)
 */
import type { Purpose } from '../api/http.ts';
import type { SourceConfig } from '../config/schema.ts';
import { PmsyncError } from '../errors.ts';
import type { SyncContext } from './context.ts';

export interface Connectivity {
  source: string;
  kind: SourceConfig['kind'];
  /** The request that was sent, below the base URL. */
  checked: string;
  /** When the server answered. */
  at: Date;
}

/**
 * The cheapest request that proves a source's URL and credentials: Core has
 * GET /status; Subset has no status resource, so its check is one row of
 * companies (the spec names GET /companies as its connectivity check); Pro has
 * neither, so one event type of the practice. Each costs one request (Core and
 * Subset: one of the day's quota). Failures throw the client's typed errors,
 * with kind-specific advice added to a refusal.
 */
export async function checkConnectivity(ctx: SyncContext, source: SourceConfig, purpose: Purpose = 'resync'): Promise<Connectivity> {
  const client = ctx.clientFor(source);
  const [path, query] = connectivityRequest(source);
  try {
    const res = await client.get(path, query, { purpose, signal: ctx.signal });
    return { source: source.name, kind: source.kind, checked: path, at: res.sentAt };
  } catch (err) {
    throw withAuthAdvice(source, err);
  }
}

export function connectivityRequest(source: SourceConfig): [string, Record<string, number>] {
  switch (source.kind) {
    case 'core':
      return ['/status', {}];
    case 'subset':
      return ['/companies', { Page: 1, Rows: 1 }];
    case 'pro':
      return [`/practices/${source.practiceId}/event-types`, { Page: 1, Limit: 1 }];
  }
}

/**
 * What else can cause a 401 on each kind, beyond wrong credentials: only what
 * applies to the source at hand. A Core source gets none: a 401 there means
 * the gateway key or the user's credentials, which the message already names.
 */
const ADVICE: Record<SourceConfig['kind'], string | null> = {
  core: null,
  subset:
    'A Subset source needs its Subset gateway key and the exact <SUBSET_NAME> in /CustomAPI/<SUBSET_NAME>/api/v1; a Core key is refused there.',
  pro: 'The Pro token is sent bare in the Authorization header (no "Bearer" word) and must belong to the configured practiceId.',
};

/** A 401 gets advice about the usual mix-ups of this kind of source; other errors pass unchanged. */
export function withAuthAdvice(source: SourceConfig, err: unknown): unknown {
  const advice = ADVICE[source.kind];
  if (!(err instanceof PmsyncError) || err.code !== 'AUTH_FAILED' || !advice || err.message.includes(advice)) return err;
  return new PmsyncError('AUTH_FAILED', `${err.message} ${advice}`, { cause: err });
}
