-- The column policy each source's stored rows of each table follow
-- (src/state/privacy-policies.ts): a changed policy is compared with it before
-- anything is written under it. Never the hash key: only its fingerprint, an
-- HMAC of a fixed text under the key, so a changed key is noticed.
CREATE TABLE "pmsync"."privacy_policies" (
    "source" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "policy" JSONB NOT NULL,
    "key_fingerprint" TEXT,
    "resync_needed" JSONB,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "privacy_policies_pkey" PRIMARY KEY ("source","table_name")
);
