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
COMMENT ON TABLE "pmsync"."source_changes" IS 'Per source (or "key:" and a gateway key fingerprint, or "model:" and a stream): the sequence number of the last write to what the scheduler decides from. Bumped by triggers on those tables; a deciding replica reads again only the sources whose number moved (src/state/source-changes.ts).';

-- Statement-level triggers with transition tables: a statement writing many rows of
-- one source (a purge of old runs, a model's first fill) bumps its scope once.
CREATE FUNCTION "pmsync"."touch_source_scope"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "pmsync"."source_changes" ("scope", "version")
    SELECT s, nextval('"pmsync"."source_change_seq"') FROM (SELECT DISTINCT "source" AS s FROM changed_rows) d
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

CREATE FUNCTION "pmsync"."touch_key_scope"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "pmsync"."source_changes" ("scope", "version")
    SELECT 'key:' || k, nextval('"pmsync"."source_change_seq"') FROM (SELECT DISTINCT "key_id" AS k FROM changed_rows) d
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

CREATE FUNCTION "pmsync"."touch_model_scope"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "pmsync"."source_changes" ("scope", "version")
    SELECT 'model:' || s || '/' || r, nextval('"pmsync"."source_change_seq"')
    FROM (SELECT DISTINCT "source" AS s, "resource" AS r FROM changed_rows) d
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

CREATE TRIGGER "source_changes_runs_insert" AFTER INSERT ON "pmsync"."runs"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_runs_update" AFTER UPDATE ON "pmsync"."runs"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_runs_delete" AFTER DELETE ON "pmsync"."runs"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_sync_state_insert" AFTER INSERT ON "pmsync"."sync_state"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_sync_state_update" AFTER UPDATE ON "pmsync"."sync_state"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_sync_state_delete" AFTER DELETE ON "pmsync"."sync_state"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_quota_usage_insert" AFTER INSERT ON "pmsync"."quota_usage"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_key_scope"();
CREATE TRIGGER "source_changes_quota_usage_update" AFTER UPDATE ON "pmsync"."quota_usage"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_key_scope"();
CREATE TRIGGER "source_changes_quota_usage_delete" AFTER DELETE ON "pmsync"."quota_usage"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_key_scope"();
CREATE TRIGGER "source_changes_webhook_events_insert" AFTER INSERT ON "pmsync"."webhook_events"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_webhook_events_update" AFTER UPDATE ON "pmsync"."webhook_events"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_webhook_events_delete" AFTER DELETE ON "pmsync"."webhook_events"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_insert" AFTER INSERT ON "pmsync"."webhook_secrets"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_update" AFTER UPDATE ON "pmsync"."webhook_secrets"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_delete" AFTER DELETE ON "pmsync"."webhook_secrets"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_stream_schedule_insert" AFTER INSERT ON "pmsync"."stream_schedule"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_stream_schedule_update" AFTER UPDATE ON "pmsync"."stream_schedule"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_stream_schedule_delete" AFTER DELETE ON "pmsync"."stream_schedule"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_change_model_insert" AFTER INSERT ON "pmsync"."change_model"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_model_scope"();
CREATE TRIGGER "source_changes_change_model_update" AFTER UPDATE ON "pmsync"."change_model"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_model_scope"();
CREATE TRIGGER "source_changes_change_model_delete" AFTER DELETE ON "pmsync"."change_model"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_model_scope"();
CREATE TRIGGER "source_changes_source_health_insert" AFTER INSERT ON "pmsync"."source_health"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_source_health_update" AFTER UPDATE ON "pmsync"."source_health"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
CREATE TRIGGER "source_changes_source_health_delete" AFTER DELETE ON "pmsync"."source_health"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_source_scope"();
