-- When work left in a stream last moved: the last unit of an open window
-- committed, or a backfill completed, by pmsync's clock (a completed check
-- leaves it). The cron command reads it to tell a multi-day backfill that
-- moves every day (healthy) from one that made no progress for a whole quota
-- day (an alert). updated_at stays the database's clock.
ALTER TABLE "pmsync"."sync_state" ADD COLUMN "progressed_at" TIMESTAMPTZ(3);
