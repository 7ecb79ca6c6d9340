import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { describeWebhookMode } from '../../src/webhooks/notified-checks.ts';
import { writeConfig } from '../support/cli.ts';

const source = { name: 'clinic', kind: 'core', baseUrl: 'https://api.example.com/api/v1', apikey: 'k', username: 'u', password: 'p' };
const configWith = (extra: Record<string, unknown>) =>
  loadConfig(STREAM_REGISTRY, { configFile: writeConfig({ sources: [source], ...extra }), env: {} });

describe('the start line of webhooks receive', () => {
  it('says notified streams are checked here, with the debounce and bound, when no serve replica schedules them', () => {
    expect(describeWebhookMode(configWith({}), { worker: true, serve: false })).toBe(
      'webhooks: no serve replica schedules these sources; notified streams (customers, appointments and orders) are checked here ' +
        'after a 60 s debounce, within 10 min while the budget allows (one check reads up to 100 changes a request)',
    );
  });

  it('says a serve replica checks them when one holds the scheduling lock', () => {
    expect(describeWebhookMode(configWith({}), { worker: true, serve: true })).toBe(
      'webhooks: a serve replica schedules these sources and checks their notified streams (customers, appointments and orders); ' +
        'this process does if no serve replica runs',
    );
  });

  it('names the streams whose notifications fetch their record: refresh "record", or streams not scheduled by budget', () => {
    expect(describeWebhookMode(configWith({ webhooks: { refresh: 'record' } }), { worker: true, serve: false })).toBe(
      'webhooks: each notification of customers, appointments and orders fetches its record here (one request per record, under the budget)',
    );
    const pinned = configWith({ schedules: { overrides: [{ resource: 'orders', cron: '0 2 * * *' }], debounceSeconds: 30 } });
    expect(describeWebhookMode(pinned, { worker: true, serve: false })).toBe(
      'webhooks: no serve replica schedules these sources; notified streams (customers and appointments) are checked here ' +
        'after a 30 s debounce, within 10 min while the budget allows (one check reads up to 100 changes a request); ' +
        'each notification of orders fetches its record here (one request per record, under the budget)',
    );
  });

  it('says a receive-only replica only stores deliveries', () => {
    expect(describeWebhookMode(configWith({}), { worker: false, serve: false })).toMatch(/^webhooks: receive only; deliveries are stored/);
  });
});
