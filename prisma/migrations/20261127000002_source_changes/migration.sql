-- What the scheduler decides from changes only when these tables change, or
-- as time passes. Every write to them bumps its source's row here (its gateway
-- key's, "key:<fingerprint>", for the quota ledger; a stream's,
-- "model:<source>/<resource>", for its change model) to the next number of one
-- sequence, from a trigger, so no writer (serve, `pmsync sync` from cron,
-- `pmsync resync`, the webhook receiver) can forget to. A deciding replica asks at each tick
-- which scopes moved past the last number it saw, and reads only those
-- sources again (src/state/source-changes.ts, src/scheduler/scheduler.ts).
CREATE SEQUENCE "pmsync"."source_change_seq";

CREATE TABLE "pmsync"."source_changes" (
    "scope" TEXT NOT NULL,
    "version" BIGINT NOT NULL,
    CONSTRAINT "source_changes_pkey" PRIMARY KEY ("scope")
);
CREATE INDEX "source_changes_version_idx" ON "pmsync"."source_changes"("version");
COMMENT ON TABLE "pmsync"."source_changes" IS 'Per source (or "key:" and a gateway key fingerprint, or "model:" and a stream): the sequence number of the last write to what the scheduler decides from.';

CREATE FUNCTION "pmsync"."touch_source_change"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
  row_scope TEXT;
BEGIN
  IF TG_OP = 'DELETE' THEN
    r := OLD;
  ELSE
    r := NEW;
  END IF;
  IF TG_TABLE_NAME = 'quota_usage' THEN
    row_scope := 'key:' || r.key_id;
  ELSIF TG_TABLE_NAME = 'change_model' THEN
    row_scope := 'model:' || r.source || '/' || r.resource;
  ELSE
    row_scope := r.source;
  END IF;
  INSERT INTO "pmsync"."source_changes" ("scope", "version") VALUES (row_scope, nextval('"pmsync"."source_change_seq"'))
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

CREATE TRIGGER "source_changes_runs" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."runs"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_sync_state" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."sync_state"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_quota_usage" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."quota_usage"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_webhook_events" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."webhook_events"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_webhook_secrets" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."webhook_secrets"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_stream_schedule" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."stream_schedule"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_change_model" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."change_model"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
CREATE TRIGGER "source_changes_source_health" AFTER INSERT OR UPDATE OR DELETE ON "pmsync"."source_health"
  FOR EACH ROW EXECUTE FUNCTION "pmsync"."touch_source_change"();
