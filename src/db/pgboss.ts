/**
 * The PostgreSQL schema pg-boss keeps its tables in. The run queue
 * (src/scheduler/dispatch.ts) and the refresh queue (src/webhooks/queue.ts)
 * share it: both read its job table directly for their counts.
 */
export const PGBOSS_SCHEMA = 'pgboss';
