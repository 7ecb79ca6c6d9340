/**
 * What the API's webhooks mean for pmsync's streams, derived from the stream
 * registry: each stream that declares a `webhook` (src/sync/streams/rest.ts)
 * brings its event names and its record URL shape. The receiver, the
 * registrations and the CLI read these tables; none is written by hand, so a
 * resource with webhooks is still one stream file.
 */
import { REST_STREAMS } from '../sync/streams/index.ts';
import type { RecordUrlShape, RestStream } from '../sync/streams/rest.ts';

/** An event name in its canonical spelling, the one its stream declares (deliveries may use any letter case). */
export type EventName = string;

export interface RecordUrl {
  resource: string;
  /** As the stream declares it: "appointments/{id}/details". */
  shape: RecordUrlShape;
  /** The shape as a pattern over the path below the base URL; its one group is the id. */
  pattern: RegExp;
}

export interface WebhookCatalog {
  /** Every event name: the streams in registry order, each one's events as declared (the order they are registered in). */
  events: readonly EventName[];
  /** The resource each event is about (Patient events are about customers). */
  resourceOf: ReadonlyMap<EventName, string>;
  /** The record URLs a delivery may point to, in registry order. */
  recordUrls: readonly RecordUrl[];
}

/** Throws on a declaration mistake (an event two streams claim, a shape without exactly one "{id}"): caught by the tests, never met at run time. */
export function webhookCatalog(streams: readonly RestStream[]): WebhookCatalog {
  const events: EventName[] = [];
  const resourceOf = new Map<EventName, string>();
  const recordUrls: RecordUrl[] = [];
  for (const stream of streams) {
    if (!stream.webhook) continue;
    for (const event of stream.webhook.events) {
      const twin = events.find((e) => e.toLowerCase() === event.toLowerCase());
      if (twin) throw new Error(`${stream.resource}: webhook event ${event} is already ${resourceOf.get(twin)}'s`);
      events.push(event);
      resourceOf.set(event, stream.resource);
    }
    const shape = stream.webhook.recordUrl;
    recordUrls.push({ resource: stream.resource, shape, pattern: shapePattern(stream.resource, shape) });
  }
  return { events, resourceOf, recordUrls };
}

/** "appointments/{id}/details" -> /^appointments\/([^/]+)\/details$/ */
function shapePattern(resource: string, shape: RecordUrlShape): RegExp {
  const parts = shape.split('{id}');
  if (parts.length !== 2) throw new Error(`${resource}: the record URL ${shape} must hold "{id}" exactly once`);
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${literal(parts[0]!)}([^/]+)${literal(parts[1]!)}$`);
}

/** The webhooks of every stream pmsync knows. */
export const WEBHOOKS: WebhookCatalog = webhookCatalog(REST_STREAMS);
