/**
 * The "cron plus webhook-triggered checks" baseline: what a team would put
 * around a sync that has no budget. Its own receiver takes the API's
 * notifications; a stream whose oldest waiting notification is `delayMinutes`
 * old is checked (one check reads every change since the last, so a burst of
 * notifications costs one check). The checks go to pmsync's run queue like
 * the scheduler's, so the requests are pmsync's own, counted by the simulator;
 * pinned crons (the rig's schedules) run beside them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreSourceConfig } from '../../src/config/schema.ts';
import type { RunJob } from '../../src/scheduler/dispatch.ts';
import { WEBHOOKS } from '../../src/webhooks/catalog.ts';
import { canonicalEventName, EVENT_NAMES } from '../../src/webhooks/events.ts';
import { RegistrationApi } from '../../src/webhooks/registration.ts';
import { MINUTE, RIG_SOURCE, type DayRig } from './day-rig.ts';

export class WebhookTrigger {
  private readonly rig: DayRig;
  private readonly delayMs: number;
  /** Set once listening: the server is made before the trigger it feeds. */
  private server: Server | null = null;
  /** The oldest and newest notifications not yet covered by a check, by resource (rig clock). */
  private readonly waiting = new Map<string, { oldest: number; newest: number }>();
  /** Notifications received, and checks this trigger dispatched. */
  notifications = 0;
  checks = 0;

  private constructor(rig: DayRig, delayMs: number) {
    this.rig = rig;
    this.delayMs = delayMs;
  }

  /**
   * Starts the receiver and registers it for every event, a minute before the
   * measured day (after rig.prepare(): the history's changes notify no one).
   */
  static async start(rig: DayRig, delayMinutes: number): Promise<WebhookTrigger> {
    const self = new WebhookTrigger(rig, delayMinutes * MINUTE);
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          const type = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { EventType?: unknown }).EventType ?? '');
          const resource = WEBHOOKS.resourceOf.get(canonicalEventName(type) ?? '');
          if (resource) self.notified(resource);
          res.writeHead(200).end();
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self.server = server;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const back = rig.clock.ms;
    rig.clock.set(rig.dayStart - MINUTE);
    try {
      const api = new RegistrationApi(rig.app.ctx.clientFor(rig.config.sources[0] as CoreSourceConfig));
      for (const event of EVENT_NAMES) await api.create(event, url);
    } finally {
      rig.clock.set(back);
    }
    return self;
  }

  private notified(resource: string): void {
    this.notifications++;
    const now = this.rig.clock.ms;
    this.waiting.set(resource, { oldest: this.waiting.get(resource)?.oldest ?? now, newest: now });
  }

  /** The rig's extraRuns hook: checks of the streams whose notifications waited long enough. */
  readonly runs = async (now: Date, scheduled: RunJob[]): Promise<RunJob[]> => {
    const out: RunJob[] = [];
    const lagMs = (this.rig.options.lagSeconds ?? 60) * 1000;
    for (const [resource, { oldest, newest }] of this.waiting) {
      // A pinned check that ran this tick read what was notified up to its window's end (now - lag).
      if (newest <= now.getTime() - lagMs && scheduled.some((j) => j.resource === resource && j.purpose === 'check')) {
        this.waiting.delete(resource);
        continue;
      }
      if (now.getTime() - oldest < this.delayMs) continue;
      const job: RunJob = {
        source: RIG_SOURCE,
        resource,
        purpose: 'webhook',
        reason: 'notified (baseline trigger)',
        firedAt: now.toISOString(),
        mustInclude: new Date(newest).toISOString(),
      };
      if (await this.rig.serve.dispatcher.dispatch(job)) {
        this.waiting.delete(resource);
        this.checks++;
        out.push(job);
      }
    }
    return out;
  };

  async close(): Promise<void> {
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
