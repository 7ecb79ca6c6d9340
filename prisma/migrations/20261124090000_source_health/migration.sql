-- Per source, whether it fails and how long serve leaves it alone: a source
-- whose credentials are refused, or whose server keeps failing after the HTTP
-- client's retries, is paused with an exponential backoff instead of being
-- retried at every tick. One row per source that has failed or succeeded in
-- serve; every update is one upsert, so replicas can record at once. Times
-- come from pmsync's clock. last_error is a redacted message (no secret).
CREATE TABLE "pmsync"."source_health" (
    "source" TEXT NOT NULL,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "last_failure_kind" TEXT,
    "last_error_code" TEXT,
    "last_error" TEXT,
    "last_failure_at" TIMESTAMPTZ(3),
    "failing_since" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "paused_until" TIMESTAMPTZ(3),
    "reported_failing" BOOLEAN NOT NULL DEFAULT false,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "source_health_pkey" PRIMARY KEY ("source")
);
