-- The scheduler reads a source's windows of the last hours and its changes
-- found since its quota day began (src/state/runs.ts, recentWindowsOf and
-- changesFoundOf) at every tick it reads the source. pmsync.runs keeps every
-- run, so through (source, resource, started_at) those reads visited the
-- whole history of a source (about 3,300 runs after four weeks; 70 sources
-- read at a tick: 68 ms and 180 ms at 300 sources x four weeks) and grew with
-- every day served. By (source, window_end) they visit the recent runs alone
-- (7.5 ms and 9 ms).
CREATE INDEX "runs_source_window_end_idx" ON "pmsync"."runs"("source", "window_end");
