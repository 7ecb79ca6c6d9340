-- Each slot's recent profile: its changes and exposure decaying with a half-life of days, not weeks,
-- so hours that moved show within days (src/state/change-model.ts). Empty until observations arrive.
ALTER TABLE "pmsync"."change_model" ADD COLUMN "recent_changes" DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE "pmsync"."change_model" ADD COLUMN "recent_exposure_hours" DOUBLE PRECISION NOT NULL DEFAULT 0;
