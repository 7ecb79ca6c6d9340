/**
 * Progress of long syncs: on a terminal, a bar per stream on stderr's last
 * line (log lines print above it); elsewhere, a progress line in the log at a
 * steady interval (src/progress-log.ts); nothing with --quiet.
 */
import type { App } from '../app.ts';
import { ProgressLog } from '../progress-log.ts';
import type { Terminal } from './output.ts';

const BAR_WIDTH = 30;

export function attachProgress(app: App, terminal: Terminal): () => void {
  if (app.config.quiet) return () => undefined;
  if (!terminal.isTTY) return attachProgressLog(app);
  let active = '';
  let rows = 0;
  app.ctx.onProgress = (e) => {
    const key = `${e.source}/${e.resource}`;
    if (key !== active) {
      active = key;
      rows = 0;
    }
    rows += e.rows;
    terminal.setStatus(bar(key, e.page, Math.max(e.totalPages ?? e.page, e.page), rows));
  };
  app.ctx.onRunEnd = () => {
    active = '';
    terminal.clearStatus();
  };
  return () => {
    terminal.clearStatus();
    app.ctx.onProgress = undefined;
    app.ctx.onRunEnd = undefined;
  };
}

/** `demo/customers |██████████░░░░░░░░░░| page 12/40 (1200 rows)` */
export function bar(stream: string, page: number, total: number, rows: number): string {
  const filled = total > 0 ? Math.round((BAR_WIDTH * Math.min(page, total)) / total) : 0;
  return `${stream} |${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}| page ${page}/${total} (${rows} rows)`;
}

/** Progress lines in the log every `config.progressSeconds`, for every stream running in this process. */
export function attachProgressLog(app: App): () => void {
  const progress = new ProgressLog({
    logger: app.logger,
    quotaLeft: async (name) => {
      const source = app.config.sources.find((s) => s.name === name);
      if (!source || source.kind === 'pro') return null;
      const snap = await app.ledgerFor(source).snapshot();
      return snap.exhaustedUntil ? 0 : Math.max(0, snap.dailyLimit - snap.used);
    },
  });
  app.ctx.onProgress = (e) => progress.observe(e);
  app.ctx.onRunEnd = (s) => progress.end(s);
  const stop = progress.every(app.config.progressSeconds ?? 30);
  return () => {
    stop();
    app.ctx.onProgress = undefined;
    app.ctx.onRunEnd = undefined;
  };
}
