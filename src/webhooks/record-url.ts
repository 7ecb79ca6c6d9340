/**
 * Reading the record an event points to from its Url, without trusting it.
 *
 * The Url only tells pmsync WHICH record changed. It is never requested: the
 * worker rebuilds the request from the source's configured base URL. Even so,
 * a Url is accepted only when it has exactly one of the allow-listed shapes
 * (the streams' record URLs, src/webhooks/catalog.ts) directly below that
 * base URL, so a forged or tampered Url cannot steer a request, and anything
 * unexpected is visible in the logs and the event table.
 *
 * The raw text is matched, not a WHATWG-parsed URL: parsing would quietly
 * resolve dot segments ("customers/x/../../orders/y"), decode "%2e%2e", turn
 * backslashes into slashes and rewrite numeric hosts, and the check would then
 * approve something other than what was sent.
 */
import { isIP } from 'node:net';
import { WEBHOOKS } from './catalog.ts';

export type RecordUrlMatch = { ok: true; resource: string; id: string } | { ok: false; reason: string };

const shapes = WEBHOOKS.recordUrls.map((r) => r.shape);
/** The allow-listed shapes, for the rejection: "customers/{id}, appointments/{id}/details or orders/{id}". */
const SHAPES = shapes.length > 1 ? `${shapes.slice(0, -1).join(', ')} or ${shapes.at(-1)}` : shapes.join('');

/**
 * Record ids are opaque URL-safe strings. Only unreserved characters (and "=",
 * for base64 padding) are allowed: no "%" (so no encoded slash or dot), no
 * "/", and an id made only of dots would be a dot segment.
 */
const ID = /^[A-Za-z0-9._~=-]{1,256}$/;

const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** True for hosts a URL parser reads as an IP address: IPv6 literals and every IPv4 spelling (decimal, hex, octal, short forms). */
export function isIpLiteral(host: string): boolean {
  if (host.startsWith('[')) return true;
  if (isIP(host) !== 0) return true;
  const last = host.replace(/\.$/, '').split('.').pop() ?? '';
  return /^(0x[0-9a-f]*|\d+)$/i.test(last);
}

export function matchRecordUrl(raw: string, baseUrl: string): RecordUrlMatch {
  const reject = (reason: string): RecordUrlMatch => ({ ok: false, reason });
  if (raw.length > 2048) return reject('the Url is too long');
  // Whitespace, control and non-ASCII characters, and backslashes, are all
  // rewritten or dropped by URL parsers; none belongs in a record URL.
  if (/[^\x21-\x7e]|\\/.test(raw)) return reject('the Url contains whitespace, control, non-ASCII or backslash characters');
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/.exec(raw);
  if (!m) return reject('the Url is not an absolute URL');
  const [, scheme, authority, path, query, fragment] = m as unknown as [
    string,
    string,
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  if (query !== undefined) return reject('the Url has a query string');
  if (fragment !== undefined) return reject('the Url has a fragment');
  if (authority.includes('@')) return reject('the Url carries credentials (userinfo)');

  const base = new URL(baseUrl);
  const protocol = `${scheme.toLowerCase()}:`;
  if (protocol !== base.protocol) return reject(`the Url's scheme is not the source's (${base.protocol.slice(0, -1)})`);
  const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!hostPort) return reject('the Url has a malformed host');
  const host = hostPort[1]!.toLowerCase();
  const baseHost = base.hostname.toLowerCase();
  if (isIpLiteral(host) && !isIpLiteral(baseHost)) return reject('the Url names an IP address where the source has a host name');
  if (host !== baseHost) return reject("the Url's host is not the source's");
  const port = hostPort[2] === undefined ? DEFAULT_PORT[protocol] : String(Number(hostPort[2]));
  if (port !== (base.port || DEFAULT_PORT[protocol])) return reject("the Url's port is not the source's");

  const prefix = `${base.pathname.replace(/\/+$/, '')}/`;
  if (!path.startsWith(prefix)) return reject("the Url is not below the source's API base path");
  const rest = path.slice(prefix.length);
  for (const shape of WEBHOOKS.recordUrls) {
    const found = shape.pattern.exec(rest);
    if (!found) continue;
    const id = found[1]!;
    if (!ID.test(id) || /^\.+$/.test(id))
      return reject('the record id in the Url has characters an opaque id never has (encoded characters or a dot segment)');
    return { ok: true, resource: shape.resource, id };
  }
  return reject(`the Url is not one of ${SHAPES}`);
}
