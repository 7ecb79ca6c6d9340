import { describe, expect, it } from 'vitest';
import { isIpLiteral, matchRecordUrl } from '../../src/webhooks/record-url.ts';

const BASE = 'https://api.example.com/api/v1';

function reason(url: string, base = BASE): string {
  const m = matchRecordUrl(url, base);
  if (m.ok) throw new Error(`expected ${url} to be rejected, got ${m.resource}/${m.id}`);
  return m.reason;
}

describe('matchRecordUrl', () => {
  it('reads the three allow-listed shapes below the base URL', () => {
    expect(matchRecordUrl(`${BASE}/customers/aB3-_x~9=`, BASE)).toEqual({ ok: true, resource: 'customers', id: 'aB3-_x~9=' });
    expect(matchRecordUrl(`${BASE}/appointments/Qw.12/details`, BASE)).toEqual({ ok: true, resource: 'appointments', id: 'Qw.12' });
    expect(matchRecordUrl(`${BASE}/orders/Z9`, BASE)).toEqual({ ok: true, resource: 'orders', id: 'Z9' });
  });

  it('tolerates case in scheme and host, an explicit default port and a trailing slash on the base', () => {
    expect(matchRecordUrl('HTTPS://API.Example.com:443/api/v1/orders/Z9', `${BASE}/`)).toMatchObject({ ok: true, id: 'Z9' });
    expect(matchRecordUrl('http://127.0.0.1:8080/api/v1/orders/Z9', 'http://127.0.0.1:8080/api/v1')).toMatchObject({ ok: true });
  });

  it('rejects another host, port or scheme', () => {
    expect(reason('https://evil.example.com/api/v1/customers/a')).toMatch(/host/);
    expect(reason('https://api.example.com.evil.net/api/v1/customers/a')).toMatch(/host/);
    expect(reason('https://api.example.com:8443/api/v1/customers/a')).toMatch(/port/);
    expect(reason('http://api.example.com/api/v1/customers/a')).toMatch(/scheme/);
    expect(reason('ftp://api.example.com/api/v1/customers/a')).toMatch(/scheme/);
  });

  it('rejects credentials, a query string or a fragment', () => {
    expect(reason('https://user:pw@api.example.com/api/v1/customers/a')).toMatch(/credentials/);
    expect(reason('https://api.example.com@evil.net/api/v1/customers/a')).toMatch(/credentials/);
    expect(reason('https://api.example.com/api/v1/customers/a?apikey=x')).toMatch(/query/);
    expect(reason('https://api.example.com/api/v1/customers/a#x')).toMatch(/fragment/);
  });

  it('rejects IP literals (any spelling) when the base is a host name', () => {
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '017700000001', '[::1]', '10.0.0.1']) {
      expect(reason(`https://${host}/api/v1/customers/a`), host).toMatch(/IP address/);
    }
  });

  it('rejects other path prefixes and other shapes', () => {
    expect(reason('https://api.example.com/api/v2/customers/a')).toMatch(/base path/);
    expect(reason('https://api.example.com/CustomAPI/x/api/v1/customers/a')).toMatch(/base path/);
    expect(reason('https://api.example.com/api/v1/companies/a')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1/customers/a/details')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1/appointments/a')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1/webhooks/1')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1/Customers/a')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1//customers/a')).toMatch(/one of/);
  });

  it('rejects dot segments, encoded characters and odd characters in the id or path', () => {
    expect(reason('https://api.example.com/api/v1/customers/..')).toMatch(/dot segment|encoded/);
    expect(reason('https://api.example.com/api/v1/customers/.')).toMatch(/dot segment|encoded/);
    expect(reason('https://api.example.com/api/v1/customers/a/../../orders/b')).toMatch(/one of/);
    expect(reason('https://api.example.com/api/v1/customers/a%2F..%2Forders')).toMatch(/encoded/);
    expect(reason('https://api.example.com/api/v1/customers/%2e%2e')).toMatch(/encoded/);
    expect(reason('https://api.example.com/api/v1/customers/a b')).toMatch(/whitespace/);
    expect(reason('https://api.example.com/api/v1\\customers/a')).toMatch(/backslash/);
    expect(reason('https://api.example.com/api/v1/customers/\u00e9')).toMatch(/non-ASCII/);
    expect(reason('//api.example.com/api/v1/customers/a')).toMatch(/absolute/);
    expect(reason('customers/a')).toMatch(/absolute/);
    expect(reason(`${BASE}/customers/${'a'.repeat(2048)}`)).toMatch(/too long/);
  });
});

describe('isIpLiteral', () => {
  it('knows host names from addresses', () => {
    expect(isIpLiteral('api.example.com')).toBe(false);
    expect(isIpLiteral('localhost')).toBe(false);
    expect(isIpLiteral('1.example.com')).toBe(false);
    expect(isIpLiteral('192.168.0.1')).toBe(true);
    expect(isIpLiteral('[fe80::1]')).toBe(true);
  });
});
