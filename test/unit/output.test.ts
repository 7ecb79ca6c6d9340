import { describe, expect, it } from 'vitest';
import { resolveOutput, Terminal } from '../../src/cli/output.ts';
import { bar } from '../../src/cli/progress.ts';
import { prettyLine } from '../../src/log-format.ts';
import { createLogger } from '../../src/log.ts';
import { describeProgress, ProgressLog } from '../../src/progress-log.ts';
import { Redactor } from '../../src/redact.ts';

describe('resolveOutput', () => {
  it('logs pretty lines on a terminal and JSON lines anywhere else, unless asked', () => {
    expect(resolveOutput({}, {}, true)).toEqual({ format: 'pretty', level: 'info', quiet: false });
    expect(resolveOutput({}, {}, false)).toEqual({ format: 'json', level: 'info', quiet: false });
    expect(resolveOutput({ logFormat: 'json' }, { PMSYNC_LOG_FORMAT: 'pretty' }, true).format).toBe('json');
    expect(resolveOutput({}, { PMSYNC_LOG_FORMAT: 'pretty' }, false).format).toBe('pretty');
    expect(() => resolveOutput({}, { PMSYNC_LOG_FORMAT: 'xml' }, false)).toThrow(
      /PMSYNC_LOG_FORMAT: "xml" is not a log format: use json or pretty/,
    );
  });

  it('takes LOG_LEVEL, else the command default; --quiet keeps errors only', () => {
    expect(resolveOutput({}, { LOG_LEVEL: 'debug' }, false).level).toBe('debug');
    expect(resolveOutput({}, {}, false, 'warn').level).toBe('warn');
    expect(resolveOutput({ quiet: true }, { LOG_LEVEL: 'debug' }, false)).toMatchObject({ level: 'error', quiet: true });
  });
});

describe('pretty log lines', () => {
  it('show the time, level, stream, message and the other fields, after redaction', () => {
    const r = new Redactor();
    r.add('Secret-123');
    const lines: string[] = [];
    const log = createLogger(r, { level: 'info', format: 'pretty', destination: { write: (s: string) => lines.push(s) } });
    log.child({ runId: 7, source: 'core', resource: 'customers' }).warn({ status: 'failed', code: 'AUTH_FAILED' }, 'run stopped');
    log.info({ note: 'key Secret-123 here' }, 'plain');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d WARN {2}core\/customers run stopped runId=7 status=failed code=AUTH_FAILED\n$/);
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d INFO {2}plain note="key \[REDACTED\] here"\n$/);
  });

  it('show an error by its code and message, and pass anything that is not JSON through', () => {
    const line = JSON.stringify({
      level: 'error',
      time: '2026-03-02T10:00:01.000Z',
      msg: 'tick failed',
      err: { message: 'boom', code: 'X' },
    });
    expect(prettyLine(line)).toBe('10:00:01 ERROR tick failed err="X: boom"');
    expect(prettyLine('not json')).toBe('not json');
    expect(prettyLine(line, { color: true })).toContain('\x1b[31mERROR\x1b[0m');
  });
});

describe('the terminal status line', () => {
  function fakeStderr(columns = 80) {
    const writes: string[] = [];
    const out = { isTTY: true, columns, write: (s: string) => writes.push(s) } as unknown as NodeJS.WriteStream;
    return { out, writes };
  }

  it('prints log lines above the bar and draws the bar again below them', () => {
    const { out, writes } = fakeStderr();
    const t = new Terminal(out);
    t.write('before\n');
    t.setStatus('core/customers |██░░| page 1/2 (100 rows)');
    t.write('12:00:00 INFO  a line\n');
    t.clearStatus();
    t.write('after\n');
    expect(writes).toEqual([
      'before\n',
      '\r\x1b[2Kcore/customers |██░░| page 1/2 (100 rows)',
      '\r\x1b[2K12:00:00 INFO  a line\ncore/customers |██░░| page 1/2 (100 rows)',
      '\r\x1b[2K',
      'after\n',
    ]);
  });

  it('cuts a bar wider than the terminal, so clearing it leaves nothing behind', () => {
    const { out, writes } = fakeStderr(20);
    new Terminal(out).setStatus('x'.repeat(50));
    expect(writes[0]).toBe(`\r\x1b[2K${'x'.repeat(18)}…`);
  });

  it('draws the bar in proportion', () => {
    expect(bar('demo/orders', 3, 4, 300)).toBe(`demo/orders |${'█'.repeat(23)}${'░'.repeat(7)}| page 3/4 (300 rows)`);
  });
});

describe('progress lines', () => {
  it('say per running stream: page x of y, rows, requests, quota left and the time to go at the pace seen', async () => {
    let now = 0;
    const logged: Array<{ obj: unknown; msg: string }> = [];
    const logger = { info: (obj: unknown, msg: string) => logged.push({ obj, msg }) } as never;
    const p = new ProgressLog({ logger, clock: () => now, quotaLeft: async (s) => (s === 'core' ? 870 : null) });
    p.observe({ source: 'core', resource: 'customers', page: 10, totalPages: 2000, rows: 100, requests: 10 });
    expect((await p.lines())[0]).toMatchObject({ page: 10, etaSeconds: null });
    now = 20_000;
    p.observe({ source: 'core', resource: 'customers', page: 30, totalPages: 2000, rows: 100, requests: 31 });
    p.observe({ source: 'pro', resource: 'patients', page: 1, totalPages: null, rows: 50, requests: 1 });
    now = 21_000;
    const lines = await p.lines();
    // 20 pages in 20 s: 1,970 pages left take 1,970 s, less the second already spent on the page in flight.
    expect(lines).toEqual([
      { source: 'core', resource: 'customers', page: 30, totalPages: 2000, rows: 200, requests: 31, quotaLeft: 870, etaSeconds: 1969 },
      { source: 'pro', resource: 'patients', page: 1, totalPages: null, rows: 50, requests: 1, quotaLeft: null, etaSeconds: null },
    ]);
    expect(describeProgress(lines[0]!)).toBe(
      'customers: page 30 of 2000, 200 rows, 31 request(s), 870 left of the quota today, about 33 min to go',
    );
    expect(describeProgress(lines[1]!)).toBe('patients: page 1 of ?, 50 rows, 1 request(s)');
    p.end({ source: 'pro', resource: 'patients' });
    await p.report();
    expect(logged.map((l) => l.msg)).toEqual([describeProgress(lines[0]!)]);
  });
});
