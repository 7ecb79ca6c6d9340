/**
 * The two shapes of pmsync's log lines: JSON (pino's own, one object a line,
 * for collectors and files) and pretty (one short line for a person at a
 * terminal). Pretty lines are made from the JSON ones, after redaction.
 */
export type LogFormat = 'json' | 'pretty';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

const LEVELS: Record<string, string> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', fatal: 'FATAL' };
const COLORS: Record<string, string> = { WARN: '\x1b[33m', ERROR: '\x1b[31m', FATAL: '\x1b[31m', DEBUG: '\x1b[90m', TRACE: '\x1b[90m' };
/** Fields every line has, or that the line's head already shows. */
const SHOWN = new Set(['level', 'time', 'app', 'msg', 'source', 'resource', 'pid', 'hostname']);

/**
 * `12:03:04 WARN  core/customers run stopped status=failed code=AUTH_FAILED`:
 * the time of day (UTC), the level, the stream when the line has one, the
 * message, then the other fields as key=value.
 */
export function prettyLine(line: string, options: { color?: boolean } = {}): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const level = LEVELS[String(entry.level)] ?? String(entry.level ?? '').toUpperCase();
  const shownLevel = options.color && COLORS[level] ? `${COLORS[level]}${level.padEnd(5)}\x1b[0m` : level.padEnd(5);
  const stream =
    typeof entry.source === 'string' ? `${entry.source}${typeof entry.resource === 'string' ? `/${entry.resource}` : ''} ` : '';
  const fields = Object.entries(entry)
    .filter(([k, v]) => !SHOWN.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${fieldValue(k, v)}`);
  return [time, shownLevel, `${stream}${String(entry.msg ?? '')}`.trim(), ...fields].filter(Boolean).join(' ');
}

function fieldValue(key: string, v: unknown): string {
  if (key === 'err' && v && typeof v === 'object') {
    const err = v as { message?: string; code?: string };
    return JSON.stringify(err.code ? `${err.code}: ${err.message ?? ''}` : (err.message ?? ''));
  }
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v);
}
