-- A stream's own rows (its runs, checkpoint, schedule row and webhook
-- notifications) now bump the stream's scope, "stream:<source>/<resource>",
-- instead of its source's, and a source's health and webhook registrations
-- bump "health:<source>": a deciding replica reads again only the streams
-- whose rows changed, and the rest of the source's state it keeps
-- (src/scheduler/observe.ts, readSourcesAgain). A row with no resource (a
-- notification of a kind pmsync does not sync) still bumps the source's own
-- scope, which has the source read whole.
CREATE FUNCTION "pmsync"."touch_stream_scope"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "pmsync"."source_changes" ("scope", "version")
    SELECT CASE WHEN r IS NULL THEN s ELSE 'stream:' || s || '/' || r END, nextval('"pmsync"."source_change_seq"')
    FROM (SELECT DISTINCT "source" AS s, "resource" AS r FROM changed_rows) d
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

CREATE FUNCTION "pmsync"."touch_health_scope"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "pmsync"."source_changes" ("scope", "version")
    SELECT 'health:' || s, nextval('"pmsync"."source_change_seq"') FROM (SELECT DISTINCT "source" AS s FROM changed_rows) d
    ON CONFLICT ("scope") DO UPDATE SET "version" = excluded."version";
  RETURN NULL;
END;
$$;

DROP TRIGGER "source_changes_runs_insert" ON "pmsync"."runs";
DROP TRIGGER "source_changes_runs_update" ON "pmsync"."runs";
DROP TRIGGER "source_changes_runs_delete" ON "pmsync"."runs";
DROP TRIGGER "source_changes_sync_state_insert" ON "pmsync"."sync_state";
DROP TRIGGER "source_changes_sync_state_update" ON "pmsync"."sync_state";
DROP TRIGGER "source_changes_sync_state_delete" ON "pmsync"."sync_state";
DROP TRIGGER "source_changes_webhook_events_insert" ON "pmsync"."webhook_events";
DROP TRIGGER "source_changes_webhook_events_update" ON "pmsync"."webhook_events";
DROP TRIGGER "source_changes_webhook_events_delete" ON "pmsync"."webhook_events";
DROP TRIGGER "source_changes_stream_schedule_insert" ON "pmsync"."stream_schedule";
DROP TRIGGER "source_changes_stream_schedule_update" ON "pmsync"."stream_schedule";
DROP TRIGGER "source_changes_stream_schedule_delete" ON "pmsync"."stream_schedule";
DROP TRIGGER "source_changes_webhook_secrets_insert" ON "pmsync"."webhook_secrets";
DROP TRIGGER "source_changes_webhook_secrets_update" ON "pmsync"."webhook_secrets";
DROP TRIGGER "source_changes_webhook_secrets_delete" ON "pmsync"."webhook_secrets";
DROP TRIGGER "source_changes_source_health_insert" ON "pmsync"."source_health";
DROP TRIGGER "source_changes_source_health_update" ON "pmsync"."source_health";
DROP TRIGGER "source_changes_source_health_delete" ON "pmsync"."source_health";

CREATE TRIGGER "source_changes_runs_insert" AFTER INSERT ON "pmsync"."runs"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_runs_update" AFTER UPDATE ON "pmsync"."runs"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_runs_delete" AFTER DELETE ON "pmsync"."runs"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_sync_state_insert" AFTER INSERT ON "pmsync"."sync_state"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_sync_state_update" AFTER UPDATE ON "pmsync"."sync_state"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_sync_state_delete" AFTER DELETE ON "pmsync"."sync_state"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_webhook_events_insert" AFTER INSERT ON "pmsync"."webhook_events"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_webhook_events_update" AFTER UPDATE ON "pmsync"."webhook_events"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_webhook_events_delete" AFTER DELETE ON "pmsync"."webhook_events"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_stream_schedule_insert" AFTER INSERT ON "pmsync"."stream_schedule"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_stream_schedule_update" AFTER UPDATE ON "pmsync"."stream_schedule"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_stream_schedule_delete" AFTER DELETE ON "pmsync"."stream_schedule"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_stream_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_insert" AFTER INSERT ON "pmsync"."webhook_secrets"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_update" AFTER UPDATE ON "pmsync"."webhook_secrets"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();
CREATE TRIGGER "source_changes_webhook_secrets_delete" AFTER DELETE ON "pmsync"."webhook_secrets"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();
CREATE TRIGGER "source_changes_source_health_insert" AFTER INSERT ON "pmsync"."source_health"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();
CREATE TRIGGER "source_changes_source_health_update" AFTER UPDATE ON "pmsync"."source_health"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();
CREATE TRIGGER "source_changes_source_health_delete" AFTER DELETE ON "pmsync"."source_health"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "pmsync"."touch_health_scope"();

COMMENT ON TABLE "pmsync"."source_changes" IS 'Per scope: a source ("<source>": read it whole), a stream ("stream:<source>/<resource>": its runs, checkpoint, schedule row, notifications), a source''s health and webhook registrations ("health:<source>"), a gateway key''s quota ledger ("key:<fingerprint>") or a stream''s change model ("model:<source>/<resource>"): the sequence number of the last write to what the scheduler decides from. Bumped by triggers on those tables; a deciding replica reads again only what moved (src/state/source-changes.ts).';
