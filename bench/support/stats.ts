/** Small statistics and formatting helpers for the benchmark report. */

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function fmtInt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a';
}

export function fmtNum(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

export function fmtPct(ratio: number): string {
  return Number.isFinite(ratio) ? `${Math.round(ratio * 100)}%` : 'n/a';
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms < 10 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function fmtMb(bytes: number): string {
  return Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(0)} MB` : 'n/a';
}

/** A markdown table. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** "n runs: a, b, c" so a reader sees the spread behind a median. */
export function spread(values: readonly number[], fmt: (n: number) => string = fmtInt): string {
  return values.map(fmt).join(', ');
}
