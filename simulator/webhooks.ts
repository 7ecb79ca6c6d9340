import { Agent, request } from 'undici';
import { combine, Rng } from './random.ts';
import type { EventName, WebhookAttempt, WebhookDelivery, WebhookPayload, WebhookRegistration, WebhookTiming } from './types.ts';

// Webhook delivery: one event is POSTed to every registration for its name.
// A non-2xx answer or an attempt running past attemptTimeoutMs fails; failed
// deliveries are retried every retryIntervalMs up to maxAttempts in total,
// with the same EventId. Delivery never blocks the mutation that caused it.

export const DEFAULT_WEBHOOK_TIMING: WebhookTiming = { attemptTimeoutMs: 15_000, retryIntervalMs: 30_000, maxAttempts: 10 };
export const WEBHOOK_APPLICATION = 'pm-simulator';
export const WEBHOOK_NODE_PREFIX = 'sim01';

export interface EventSource {
  readonly apikey: string;
  readonly tenantId: string;
  readonly registrations: ReadonlyMap<number, WebhookRegistration>;
}

interface Delivery extends WebhookDelivery {
  body: string;
}

export class WebhookDispatcher {
  readonly attempts: WebhookAttempt[] = [];
  readonly deliveries: Delivery[] = [];
  private readonly timing: WebhookTiming;
  private readonly now: () => Date;
  private readonly recordBaseUrl: () => string;
  private readonly rng: Rng;
  private readonly agent = new Agent({ keepAliveTimeout: 1_000, connections: 32 });
  private readonly timers = new Map<NodeJS.Timeout, Delivery>();
  private readonly inflight = new Set<AbortController>();
  private pending = 0;
  private waiters: Array<() => void> = [];
  private closed = false;

  constructor(timing: WebhookTiming, now: () => Date, seed: number, recordBaseUrl: () => string) {
    this.timing = timing;
    this.now = now;
    this.rng = new Rng(combine(seed, 0xe7e7));
    this.recordBaseUrl = recordBaseUrl;
  }

  emit(source: EventSource, eventType: EventName, recordPath: string): void {
    if (this.closed) return;
    const targets = [...source.registrations.values()].filter((r) => r.EventType === eventType);
    if (targets.length === 0) return;
    const payload: WebhookPayload = {
      Application: WEBHOOK_APPLICATION,
      TenantId: `${WEBHOOK_NODE_PREFIX}_${source.tenantId}`,
      EventId: this.rng.guid(),
      EventType: eventType,
      EventTimestamp: this.now().toISOString(),
      Url: `${this.recordBaseUrl()}/${recordPath}`,
    };
    const body = JSON.stringify(payload);
    for (const registration of targets) {
      const delivery: Delivery = {
        eventId: payload.EventId,
        eventType,
        apikey: source.apikey,
        webhookId: registration.Id,
        webhookUrl: registration.WebhookUrl,
        payload,
        attempts: 0,
        state: 'pending',
        body,
      };
      this.deliveries.push(delivery);
      this.pending++;
      void this.attempt(delivery);
    }
  }

  /** Resolves when no delivery is pending. */
  settled(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [timer, delivery] of this.timers) {
      clearTimeout(timer);
      this.finish(delivery, 'cancelled');
    }
    this.timers.clear();
    for (const controller of this.inflight) controller.abort(new Error('simulator closed'));
    await this.agent.destroy().catch(() => undefined);
    for (const delivery of this.deliveries) if (delivery.state === 'pending') this.finish(delivery, 'cancelled');
  }

  snapshot(): WebhookDelivery[] {
    return this.deliveries.map(({ body: _body, ...delivery }) => ({ ...delivery }));
  }

  private async attempt(delivery: Delivery): Promise<void> {
    delivery.attempts++;
    const attempt = delivery.attempts;
    const at = this.now();
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('attempt timed out')), this.timing.attemptTimeoutMs);
    this.inflight.add(controller);
    let status: number | undefined;
    let error: string | undefined;
    try {
      const response = await request(delivery.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: delivery.body,
        signal: controller.signal,
        dispatcher: this.agent,
      });
      status = response.statusCode;
      await response.body.dump();
    } catch (cause) {
      error = controller.signal.aborted
        ? String((controller.signal.reason as Error | undefined)?.message ?? 'aborted')
        : errorMessage(cause);
    } finally {
      clearTimeout(timer);
      this.inflight.delete(controller);
    }
    if (delivery.state !== 'pending') return;
    const ok = error === undefined && status !== undefined && status >= 200 && status < 300;
    this.attempts.push({
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      apikey: delivery.apikey,
      webhookId: delivery.webhookId,
      webhookUrl: delivery.webhookUrl,
      attempt,
      at,
      durationMs: Math.round(performance.now() - started),
      ...(status === undefined ? {} : { status }),
      ...(error === undefined ? {} : { error }),
      ok,
    });
    if (ok) return this.finish(delivery, 'delivered');
    if (this.closed) return this.finish(delivery, 'cancelled');
    if (attempt >= this.timing.maxAttempts) return this.finish(delivery, 'failed');
    const retry = setTimeout(() => {
      this.timers.delete(retry);
      void this.attempt(delivery);
    }, this.timing.retryIntervalMs);
    this.timers.set(retry, delivery);
  }

  private finish(delivery: Delivery, state: WebhookDelivery['state']): void {
    if (delivery.state !== 'pending') return;
    delivery.state = state;
    this.pending--;
    if (this.pending === 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

function errorMessage(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}
