import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Redactor, redactUrl } from '../../src/redact.ts';
import { createLogger } from '../../src/log.ts';

describe('redaction', () => {
  it('removes secret query parameters and userinfo from URLs', () => {
    const shown = redactUrl('https://user:pw@api.example.com/api/v1/customers?apikey=K3Y&api_key=QkFTSUM=&Page=2');
    expect(shown).not.toContain('K3Y');
    expect(shown).not.toContain('QkFTSUM');
    expect(shown).not.toContain('pw');
    expect(shown).toContain('Page=2');
  });

  it('masks registered secrets anywhere in text, also URL-encoded', () => {
    const r = new Redactor();
    r.add('s3cr3t/pass+word', 'api-key-123');
    const text = r.redact('failed with s3cr3t/pass+word and api-key-123 and ' + encodeURIComponent('s3cr3t/pass+word'));
    expect(text).not.toContain('s3cr3t');
    expect(text).not.toContain('api-key-123');
    expect(text).not.toContain(encodeURIComponent('s3cr3t/pass+word'));
  });

  it('scrubs log lines: messages, nested fields, errors and authorization headers', () => {
    const r = new Redactor();
    r.add('TOPSECRET');
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = createLogger(r, { level: 'info', destination: sink });
    log.info(
      { headers: { authorization: 'Basic abc' }, nested: { url: 'x?apikey=TOPSECRET' }, err: new Error('bad TOPSECRET') },
      'message with TOPSECRET',
    );
    const all = lines.join('');
    expect(all).toContain('message with [REDACTED]');
    expect(all).not.toContain('TOPSECRET');
    expect(all).not.toContain('Basic abc');
  });
});
