import { describe, expect, it } from 'vitest';
import { EVENT_NAMES, deliverySchema } from '../../src/webhooks/events.ts';
import {
  maskUrl,
  normalizePublicBase,
  parseRegistrationUrl,
  planRegistration,
  registrationUrl,
  type Registration,
} from '../../src/webhooks/registration.ts';
import { hashToken, newToken, TOKEN_PATTERN, tokenMatches } from '../../src/webhooks/secrets.ts';
import { type SecretRow } from '../../src/state/webhook-secrets.ts';

const BASE = 'https://sync.example.com';
const T1 = 'a'.repeat(43);
const T2 = 'b'.repeat(43);
const current = (t: string): SecretRow => ({ hash: hashToken(t), activatedAt: new Date(0), expiresAt: null });
const old = (t: string): SecretRow => ({ hash: hashToken(t), activatedAt: new Date(0), expiresAt: new Date(1e13) });

let nextId = 1;
function regs(url: string, events: readonly string[] = EVENT_NAMES): Registration[] {
  return events.map((e) => ({ Id: nextId++, WebhookUrl: url, EventType: e }));
}

describe('secret tokens', () => {
  it('are 256-bit URL-safe strings, matched by hash', () => {
    const t = newToken();
    expect(t).toMatch(TOKEN_PATTERN);
    expect(newToken()).not.toBe(t);
    expect(hashToken(t)).not.toContain(t);
    expect(tokenMatches(t, [hashToken('x'), hashToken(t)])).toBe(true);
    expect(tokenMatches(`${t}x`, [hashToken(t)])).toBe(false);
    expect(tokenMatches('', [hashToken(t)])).toBe(false);
    expect(tokenMatches(t, ['not-hex'])).toBe(false);
  });
});

describe('registration URLs', () => {
  it('carry the source and token below the public base, and print masked', () => {
    const url = registrationUrl(BASE, 'clinic', T1);
    expect(url).toBe(`${BASE}/webhooks/clinic/${T1}`);
    expect(parseRegistrationUrl(url, 'clinic')).toEqual({ base: BASE, token: T1 });
    expect(parseRegistrationUrl(url, 'other')).toBeNull();
    expect(parseRegistrationUrl(`${BASE}/webhooks/clinic/short`, 'clinic')).toBeNull();
    expect(maskUrl(url)).toBe(`${BASE}/webhooks/clinic/<secret>`);
    expect(maskUrl('https://u:p@other.example.com/hook?token=abc')).not.toMatch(/u:p|abc/);
  });

  it('need an https public base (http only on loopback, or for a source that accepts it), without query or credentials', () => {
    expect(normalizePublicBase('https://sync.example.com/pmsync/')).toBe('https://sync.example.com/pmsync');
    expect(normalizePublicBase('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(() => normalizePublicBase('http://sync.example.com', { name: 'clinic' })).toThrow(
      /plain http:\/\/ to sync\.example\.com .*Use https:\/\/, or, .* set "allowInsecureHttp": true on source "clinic"$/,
    );
    expect(normalizePublicBase('http://sync.example.com/', { name: 'clinic', allowInsecureHttp: true })).toBe('http://sync.example.com');
    expect(() => normalizePublicBase('ftp://sync.example.com', { name: 'clinic', allowInsecureHttp: true })).toThrow(/must use https/);
    expect(() => normalizePublicBase('https://sync.example.com/?a=1')).toThrow(/query/);
    expect(() => normalizePublicBase('https://u:p@sync.example.com')).toThrow(/credentials/);
    expect(() => normalizePublicBase('sync.example.com')).toThrow(/absolute/);
  });
});

describe('planRegistration', () => {
  const input = { source: 'clinic', publicBase: BASE, events: EVENT_NAMES, rotate: false, newToken: () => T2 };

  it('first time: a new token and one registration per event; other integrations untouched', () => {
    const plan = planRegistration({ ...input, registrations: regs('https://other.example.com/hook'), secrets: [] });
    expect(plan).toMatchObject({ token: T2, tokenIsNew: true, create: [...EVENT_NAMES], keep: [], remove: [], others: 6 });
  });

  it('again: reuses the current token read back from the registrations, changes nothing', () => {
    const existing = regs(registrationUrl(BASE, 'clinic', T1));
    const plan = planRegistration({ ...input, registrations: existing, secrets: [current(T1)] });
    expect(plan).toMatchObject({ token: T1, tokenIsNew: false, create: [], remove: [] });
    expect(plan.keep).toHaveLength(6);
  });

  it('adds only the missing events, and removes a duplicate pair', () => {
    const url = registrationUrl(BASE, 'clinic', T1);
    const existing = [...regs(url, ['Patient.Created', 'order.updated']), ...regs(url, ['Patient.Created'])];
    const plan = planRegistration({ ...input, registrations: existing, secrets: [current(T1)] });
    expect(plan.create).toEqual(['Patient.Updated', 'Appointment.Created', 'Appointment.Updated', 'Order.Created']);
    expect(plan.remove.map((r) => r.why)).toEqual(['a duplicate']);
  });

  it('rotation: every registered event moves to a new token, never fewer events', () => {
    const existing = regs(registrationUrl(BASE, 'clinic', T1), ['Patient.Updated', 'Order.Updated']);
    const plan = planRegistration({ ...input, events: ['Patient.Updated'], rotate: true, registrations: existing, secrets: [current(T1)] });
    expect(plan).toMatchObject({ token: T2, tokenIsNew: true, create: ['Patient.Updated', 'Order.Updated'] });
    expect(plan.remove.map((r) => r.Id)).toEqual(existing.map((r) => r.Id));
  });

  it('a token this database never issued is not ours: left alone', () => {
    const foreign = regs(registrationUrl(BASE, 'clinic', T1));
    const plan = planRegistration({ ...input, registrations: foreign, secrets: [] });
    expect(plan).toMatchObject({ tokenIsNew: true, remove: [], others: 6 });
  });

  it('registrations left under an older token (an interrupted rotation) are cleaned up', () => {
    const url = registrationUrl(BASE, 'clinic', T1);
    const stale = regs(registrationUrl(BASE, 'clinic', T2), ['Order.Created']);
    const plan = planRegistration({ ...input, registrations: [...regs(url), ...stale], secrets: [current(T1), old(T2)] });
    expect(plan).toMatchObject({ token: T1, create: [] });
    expect(plan.remove).toEqual([expect.objectContaining({ Id: stale[0]!.Id, why: 'an older secret token' })]);
  });

  it('a new public base gets a new token', () => {
    const existing = regs(registrationUrl('https://old.example.com', 'clinic', T1));
    const plan = planRegistration({ ...input, registrations: existing, secrets: [current(T1)] });
    expect(plan).toMatchObject({ token: T2, tokenIsNew: true, create: [...EVENT_NAMES] });
    expect(plan.remove.every((r) => r.why === 'another URL')).toBe(true);
  });
});

describe('deliverySchema', () => {
  const body = {
    Application: 'app',
    TenantId: 'n1_42',
    EventId: '7f1c1d34-58a0-4b1e-9a53-5f2f0c8d1e11',
    EventType: 'patient.updated',
    EventTimestamp: '2026-11-22T08:00:00Z',
    Url: 'https://api.example.com/api/v1/customers/a',
  };
  it('accepts the six event names in any case, stored canonically', () => {
    expect(deliverySchema.parse(body).EventType).toBe('Patient.Updated');
    expect(deliverySchema.safeParse({ ...body, EventType: 'Customer.Created' }).success).toBe(false);
  });
  it('requires every field', () => {
    for (const k of Object.keys(body)) {
      const { [k]: _gone, ...rest } = body as Record<string, string>;
      expect(deliverySchema.safeParse(rest).success, k).toBe(false);
    }
    expect(deliverySchema.safeParse({ ...body, EventTimestamp: 'yesterday' }).success).toBe(false);
    expect(deliverySchema.safeParse({ ...body, EventId: 'has space' }).success).toBe(false);
  });
  it('takes EventTimestamp only as an ISO 8601 date-time, one without a zone as UTC', () => {
    for (const EventTimestamp of ['1', '2026', '2026-11-22', '22/11/2026 08:00'])
      expect(deliverySchema.safeParse({ ...body, EventTimestamp }).success, EventTimestamp).toBe(false);
    expect(deliverySchema.parse({ ...body, EventTimestamp: '2026-11-22T08:00:00.5+01:00' }).EventTimestamp).toBe(
      '2026-11-22T08:00:00.5+01:00',
    );
    expect(deliverySchema.parse({ ...body, EventTimestamp: '2026-11-22T08:00:00' }).EventTimestamp).toBe('2026-11-22T08:00:00Z');
  });
});
