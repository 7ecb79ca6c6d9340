import type { IncomingMessage, ServerResponse } from 'node:http';

// Small response and request helpers shared by the API handlers.

const MAX_BODY_BYTES = 1_048_576;

export type Headers = Record<string, string | number>;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Headers = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Headers = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number, headers: Headers = {}): void {
  // 204 must not carry Content-Length.
  res.writeHead(status, status === 204 ? headers : { 'content-length': 0, ...headers });
  res.end();
}

/** The short JSON error body used for 400 and 404 answers. */
export function sendMessage(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { Message: message });
}

export type BodyResult = { ok: true; value: unknown } | { ok: false; message: string };

export async function readJson(req: IncomingMessage): Promise<BodyResult> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return { ok: false, message: 'Request body is too large' };
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return { ok: false, message: 'A JSON body is required' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, message: 'The body is not valid JSON' };
  }
}

/**
 * Query parameters with case-insensitive names, as the real gateway binds
 * them; the first occurrence wins and empty values count as absent.
 */
export class Query {
  private readonly values = new Map<string, string>();

  constructor(params: URLSearchParams) {
    for (const [name, value] of params) {
      const key = name.toLowerCase();
      if (!this.values.has(key) && value !== '') this.values.set(key, value);
    }
  }

  get(name: string): string | undefined {
    return this.values.get(name.toLowerCase());
  }
}

/** A decimal integer >= min, or undefined. */
export function parseInteger(text: string, min: number): number | undefined {
  if (!/^\d{1,15}$/.test(text.trim())) return undefined;
  const value = Number(text.trim());
  return value >= min ? value : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
