/**
 * Plain http across a network: a source's API URL and the URL its webhooks
 * are delivered to are refused in plain http unless the source allows it
 * (allowInsecureHttp), and warned about when it does.
 */
const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.test(hostname);
}

/**
 * The host a URL reaches in plain http across a network (anything but this
 * machine), or undefined for https, loopback and what is not a URL.
 */
export function insecureHttpHost(url: string | URL): string | undefined {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return undefined;
  }
  return u.protocol === 'http:' && !isLoopbackHost(u.hostname) ? u.host : undefined;
}
