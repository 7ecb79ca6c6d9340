-- Scheduling by budget: requests counted by purpose, each stream's scheduling
-- state, and the change model learned from the stream's own runs.

-- Requests by purpose on each quota day; `used` stays their total. `budget` is
-- the scheduled-spend budget in force (checks + webhook-triggered fetches + full
-- refreshes), so one conditional upsert can enforce it across replicas.
ALTER TABLE "pmsync"."quota_usage"
    ADD COLUMN "used_check" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "used_backfill" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "used_webhook" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "used_resync" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "used_full" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "budget" INTEGER;

-- One row per stream that serve schedules by budget. Claiming a run is one
-- conditional UPDATE of last_fire_at, so among several replicas exactly one
-- dispatches it. Times come from pmsync's clock.
CREATE TABLE "pmsync"."stream_schedule" (
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "last_fire_at" TIMESTAMPTZ(3),
    "last_fire_purpose" TEXT,
    "last_fire_reason" TEXT,
    "last_fire_by" TEXT,
    "last_done_at" TIMESTAMPTZ(3),
    "last_check_at" TIMESTAMPTZ(3),
    "last_outcome" TEXT,
    "notified_until" TIMESTAMPTZ(3),
    "paused_until" TIMESTAMPTZ(3),
    "warning" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stream_schedule_pkey" PRIMARY KEY ("source", "resource")
);

-- The change model: rows changed and hours observed per hour-of-week slot
-- (weekday * 24 + hour in the source's time zone, Sunday = 0). Both decay with
-- a half-life from as_of, so the model follows a practice's season.
CREATE TABLE "pmsync"."change_model" (
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "slot" INTEGER NOT NULL,
    "changes" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "exposure_hours" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "as_of" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "change_model_pkey" PRIMARY KEY ("source", "resource", "slot")
);

-- Webhook notifications waiting for their stream's next check are found by stream and time.
CREATE INDEX "webhook_events_source_resource_received_at_idx" ON "pmsync"."webhook_events"("source", "resource", "received_at");

-- Why each run was made (check, backfill, webhook, full, resync); null for runs recorded before.
ALTER TABLE "pmsync"."runs" ADD COLUMN "purpose" TEXT;

-- Streams pinned to a cron expression keep their last fire in stream_schedule
-- too: one claim mechanism for every stream. Fires already claimed carry over.
INSERT INTO "pmsync"."stream_schedule" ("source", "resource", "last_fire_at", "last_fire_reason", "last_fire_by", "updated_at")
SELECT "source", "resource", "last_fire_at", 'cron', "last_claimed_by", "updated_at" FROM "pmsync"."schedules"
ON CONFLICT DO NOTHING;
DROP TABLE "pmsync"."schedules";
