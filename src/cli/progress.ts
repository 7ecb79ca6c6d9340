/**
 * Progress of long syncs: a bar per stream on a terminal, nothing extra
 * otherwise (the structured log lines already say what happens).
 */
import cliProgress from 'cli-progress';
import type { App } from '../app.ts';

export function attachProgress(app: App): () => void {
  if (!process.stderr.isTTY) return () => undefined;
  const bar = new cliProgress.SingleBar(
    { format: '{stream} |{bar}| page {value}/{total} ({rows} rows)', stream: process.stderr, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let active = '';
  let rows = 0;
  app.ctx.onProgress = (e) => {
    const key = `${e.source}/${e.resource}`;
    if (key !== active) {
      if (active) bar.stop();
      active = key;
      rows = 0;
      bar.start(e.totalPages ?? e.page, 0, { stream: key, rows });
    }
    rows += e.rows;
    bar.setTotal(Math.max(e.totalPages ?? e.page, e.page));
    bar.update(e.page, { rows });
  };
  return () => {
    if (active) bar.stop();
    active = '';
    app.ctx.onProgress = undefined;
  };
}
