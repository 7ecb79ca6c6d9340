/**
 * Secret scrubbing. Every configured secret (apikey, password, Basic value,
 * Pro token) is registered once at start-up; any string that reaches a log
 * line or an error message passes through `redact` first.
 */
const MASK = '[REDACTED]';
const SECRET_QUERY_PARAMS = ['apikey', 'api_key', 'token', 'password'];

export class Redactor {
  private secrets: string[] = [];

  add(...values: Array<string | undefined>): void {
    for (const v of values) {
      if (v && v.length >= 3 && !this.secrets.includes(v)) this.secrets.push(v);
    }
    // Longest first so a secret containing another is masked whole.
    this.secrets.sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) {
      if (out.includes(s)) out = out.split(s).join(MASK);
      const enc = encodeURIComponent(s);
      if (enc !== s && out.includes(enc)) out = out.split(enc).join(MASK);
    }
    return out;
  }

  /** Deep copy of a value with every string redacted. */
  scrub<T>(value: T): T {
    return scrubValue(value, this) as T;
  }
}

function scrubValue(value: unknown, r: Redactor, depth = 0): unknown {
  if (typeof value === 'string') return r.redact(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (value instanceof Error) {
    return { type: value.name, message: r.redact(value.message), code: (value as { code?: unknown }).code };
  }
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, r, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = /^(authorization|password|apikey|api_key|token|secret)$/i.test(k) ? MASK : scrubValue(v, r, depth + 1);
  }
  return out;
}

/** A URL safe to print: secret query parameters and userinfo removed. */
export function redactUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return '[unparseable url]';
  }
  if (u.username || u.password) {
    u.username = '';
    u.password = '';
  }
  for (const p of SECRET_QUERY_PARAMS) if (u.searchParams.has(p)) u.searchParams.set(p, MASK);
  return u.toString().replaceAll(encodeURIComponent(MASK), MASK);
}
