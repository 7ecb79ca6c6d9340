-- Each purge of data past its retention (src/state/retention.ts): when it ran
-- and how many rows of each kind it deleted, so `status` can say what was
-- removed. Counts only: no deleted value is kept.
CREATE TABLE "pmsync"."retention_purges" (
    "id" BIGSERIAL NOT NULL,
    "purged_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "quarantine" INTEGER NOT NULL DEFAULT 0,
    "drift" INTEGER NOT NULL DEFAULT 0,
    "webhook_events" INTEGER NOT NULL DEFAULT 0,
    "history" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "retention_purges_pkey" PRIMARY KEY ("id")
);
