-- When in its window a check's changes began: the earliest ModifiedOn among
-- the rows it found changed. A check that reads four quiet hours and the first
-- minutes of a rush says the rush's rate, not the four hours' average
-- (src/scheduler/rates.ts, splitAtFirstChange). Null for runs before this
-- column, and for streams whose records carry no modification time.
ALTER TABLE "pmsync"."runs" ADD COLUMN "first_change_at" TIMESTAMPTZ(3);
COMMENT ON COLUMN "pmsync"."runs"."first_change_at" IS 'The earliest modification time among the rows its window found changed (by their ModifiedOn); null when unknown.';
