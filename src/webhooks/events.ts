/**
 * Glossary of the webhook side of pmsync (the sync words are in src/sync/types.ts).
 *
 * - event: one notification the API sends when a customer, appointment or
 *   order is created or updated; named by its EventType, identified by its
 *   EventId (the same on every retry of that notification).
 * - delivery: one HTTP POST of an event to pmsync's receiver. A delivery whose
 *   EventId was already received is a duplicate: acknowledged, not processed.
 * - registration: one (EventType, WebhookUrl) pair stored at the API.
 * - secret token: the random last path segment of the WebhookUrl pmsync
 *   registers; only its SHA-256 hash is stored.
 * - refresh: refetching the one record an event points to and writing it like
 *   a page. Refreshes are queued per record; events for a record whose refresh
 *   is still waiting are coalesced into it.
 * - dead letter: a refresh that failed every attempt (or can never succeed),
 *   kept for inspection and `pmsync webhooks redrive`.
 */
import { z } from 'zod';
import { isStorableText } from '../db/storable.ts';
import { WEBHOOKS, type EventName } from './catalog.ts';

export type { EventName };

/** Path prefix of the receiver: POST /webhooks/<source>/<token>. */
export const WEBHOOK_PATH_PREFIX = '/webhooks/';

/** Every event name pmsync accepts and registers, from the stream registry (src/webhooks/catalog.ts). */
export const EVENT_NAMES: readonly EventName[] = WEBHOOKS.events;

/** The spec matches event names case-insensitively; pmsync stores the canonical spelling. */
export function canonicalEventName(name: string): EventName | undefined {
  const lower = name.trim().toLowerCase();
  return EVENT_NAMES.find((e) => e.toLowerCase() === lower);
}

/**
 * Text PostgreSQL can store: a field with a NUL or an unpaired surrogate could
 * never be written, so the delivery is refused as invalid (400), never met
 * with 503, which would make the sender retry a body that can never succeed.
 */
const storable = z.string().refine(isStorableText, 'must not contain NUL or unpaired surrogate characters');
const text = (max: number) => storable.min(1).max(max);

/** The JSON body of one delivery (spec "Delivery"); unknown members are ignored. */
export const deliverySchema = z.object({
  Application: text(200),
  TenantId: text(200),
  /** A GUID in the spec; any short token without spaces or control characters is accepted. */
  EventId: z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable characters without spaces'),
  EventType: z.string().transform((v, ctx) => {
    const name = canonicalEventName(v);
    if (!name) {
      ctx.addIssue({ code: 'custom', message: `must be one of ${EVENT_NAMES.join(', ')}` });
      return z.NEVER;
    }
    return name;
  }),
  /**
   * A full ISO 8601 date-time (Date.parse alone takes "1" for the year 2001).
   * The spec says UTC, so one written without a zone is read as UTC.
   */
  EventTimestamp: z.iso
    .datetime({ offset: true, local: true, error: 'must be an ISO 8601 date-time, e.g. 2026-03-02T09:59:00Z' })
    .transform((v) => (/(?:Z|[+-]\d{2}(?::?\d{2})?)$/i.test(v) ? v : `${v}Z`)),
  Url: text(2048),
});

export type Delivery = z.infer<typeof deliverySchema>;
