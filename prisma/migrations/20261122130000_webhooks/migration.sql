-- Webhook receiver: secret token hashes and received events (src/webhooks).
CREATE TABLE "pmsync"."webhook_secrets" (
    "source" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "activated_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_secrets_pkey" PRIMARY KEY ("source","token_hash")
);

CREATE TABLE "pmsync"."webhook_events" (
    "source" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "application" TEXT NOT NULL,
    "event_timestamp" TIMESTAMPTZ(3),
    "url" TEXT NOT NULL,
    "resource" TEXT,
    "record_id" TEXT,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "duplicates" INTEGER NOT NULL DEFAULT 0,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_events_pkey" PRIMARY KEY ("source","event_id")
);

CREATE INDEX "webhook_events_received_at_idx" ON "pmsync"."webhook_events"("received_at");
