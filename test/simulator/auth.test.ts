import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../simulator/index.ts';
import type { Simulator } from '../../simulator/index.ts';
import { basic, call, CORE, coreGet, coreUrl, SUBSET } from './support.ts';

describe('Core and Subset authentication', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 7,
      tenants: [CORE, SUBSET],
      practices: [
        { token: 'tok-1', practiceId: 11 },
        { token: 'tok-2', practiceId: 12 },
      ],
    });
  });
  afterAll(() => sim.close());

  it('accepts Basic credentials with the gateway apikey, /status included', async () => {
    const status = await coreGet(sim.coreBaseUrl(), 'status', CORE);
    expect(status.status).toBe(200);
    expect(status.json()).toMatchObject({ Status: 'OK' });
    expect((await coreGet(sim.coreBaseUrl(), 'customers', CORE)).status).toBe(200);
  });

  it('accepts the api_key query parameter carrying the same Base64 value', async () => {
    const url = coreUrl(sim.coreBaseUrl(), 'customers', CORE, { api_key: basic(CORE.username, CORE.password) });
    expect((await call(url)).status).toBe(200);
  });

  it.each([
    ['no apikey', () => call(`${sim.coreBaseUrl()}/status`, { headers: { authorization: `Basic ${basic('alice', 's3cret')}` } })],
    [
      'an unknown apikey',
      () =>
        call(coreUrl(sim.coreBaseUrl(), 'status', { ...CORE, apikey: 'nope' }), {
          headers: { authorization: `Basic ${basic('alice', 's3cret')}` },
        }),
    ],
    ['no user credentials', () => call(coreUrl(sim.coreBaseUrl(), 'status', CORE))],
    [
      'a wrong password',
      () => call(coreUrl(sim.coreBaseUrl(), 'status', CORE), { headers: { authorization: `Basic ${basic('alice', 'wrong')}` } }),
    ],
    [
      'a bearer scheme',
      () => call(coreUrl(sim.coreBaseUrl(), 'status', CORE), { headers: { authorization: `Bearer ${basic('alice', 's3cret')}` } }),
    ],
    [
      'double-encoded credentials',
      () =>
        call(coreUrl(sim.coreBaseUrl(), 'status', CORE), {
          headers: { authorization: `Basic ${Buffer.from(basic('alice', 's3cret')).toString('base64')}` },
        }),
    ],
    ['a wrong api_key value', () => call(coreUrl(sim.coreBaseUrl(), 'status', CORE, { api_key: basic('alice', 'nope') }))],
    ['a Core key on a Subset path', () => coreGet(sim.subsetBaseUrl('Acme'), 'companies', CORE)],
    ['a Subset key on a Core path', () => coreGet(sim.coreBaseUrl(), 'companies', SUBSET)],
    ['a Subset key under another subset name', () => coreGet(sim.subsetBaseUrl('Other'), 'companies', SUBSET)],
  ])('answers 401 with a non-JSON body for %s', async (_name, send) => {
    const reply = await send();
    expect(reply.status).toBe(401);
    expect(() => JSON.parse(reply.text)).toThrow();
  });

  it('checks credentials before routing, so unknown paths are 401 too', async () => {
    expect((await call(coreUrl(sim.coreBaseUrl(), 'nothing-here', CORE))).status).toBe(401);
    expect((await coreGet(sim.coreBaseUrl(), 'nothing-here', CORE)).status).toBe(404);
  });

  it('Pro wants the bare token in Authorization', async () => {
    const url = `${sim.proBaseUrl()}/practices/11/event-types`;
    expect((await call(url, { headers: { authorization: 'tok-1' } })).status).toBe(200);
    expect((await call(url, { headers: { authorization: 'Bearer tok-1' } })).status).toBe(401);
    expect((await call(url)).status).toBe(401);
    expect((await call(url, { headers: { authorization: 'tok-9' } })).status).toBe(401);
  });

  it('Pro answers 404 for an unknown practice or another practice than the token’s', async () => {
    expect((await call(`${sim.proBaseUrl()}/practices/99/event-types`, { headers: { authorization: 'tok-1' } })).status).toBe(404);
    expect((await call(`${sim.proBaseUrl()}/practices/12/event-types`, { headers: { authorization: 'tok-1' } })).status).toBe(404);
  });
});
