/**
 * COPY ... FROM STDIN over a pg client, without a dependency: a "submittable"
 * (the hook node-postgres offers for custom protocol flows, the one
 * pg-copy-streams uses) that sends the statement, then the given chunks as
 * CopyData messages, then CopyDone, and resolves with the row count.
 */
import type pg from 'pg';

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyFromStdin {
  private readonly text: string;
  private readonly chunks: readonly Buffer[];
  private readonly resolve: (rows: number) => void;
  private readonly reject: (err: Error) => void;
  private rows = 0;

  constructor(text: string, chunks: readonly Buffer[], resolve: (rows: number) => void, reject: (err: Error) => void) {
    this.text = text;
    this.chunks = chunks;
    this.resolve = resolve;
    this.reject = reject;
  }

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    for (const chunk of this.chunks) connection.sendCopyFromChunk(chunk);
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.rows = Number(/(\d+)$/.exec(msg.text ?? '')?.[1] ?? 0);
  }

  handleReadyForQuery(): void {
    this.resolve(this.rows);
  }

  handleError(err: Error): void {
    this.reject(err);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs `COPY table (cols) FROM STDIN` with text-format chunks; resolves with the rows copied. */
export function copyFrom(client: pg.PoolClient | pg.Client, text: string, chunks: readonly Buffer[]): Promise<number> {
  return new Promise((resolve, reject) => {
    // node-postgres accepts any object with submit(); its types only know Query configs.
    (client as unknown as { query(q: unknown): void }).query(new CopyFromStdin(text, chunks, resolve, reject));
  });
}

const NEEDS_ESCAPE = /[\\\n\r\t]/;

/** One value in COPY text format: \N for null, backslash escapes for the rest. */
export function copyValue(v: unknown): string {
  if (v === null || v === undefined) return '\\N';
  const s = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));
}
