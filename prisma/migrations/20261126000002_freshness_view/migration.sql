-- Freshness in SQL: how current each resource table is, per source, for
-- analysts and dashboards (docs/analysts.md).
--
-- pmsync.stream_targets holds the schedule and freshness target of every
-- configured stream, as the configuration pmsync last ran with says
-- (written by `pmsync serve` at start and on reload, and by `pmsync sync`):
-- the database cannot read the configuration file.
CREATE TABLE "pmsync"."stream_targets" (
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "schedule" TEXT NOT NULL,
    "target_minutes" DOUBLE PRECISION,
    "floor_minutes" DOUBLE PRECISION,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stream_targets_pkey" PRIMARY KEY ("source","resource")
);

-- Counting the rows marked not seen reads only those rows.
CREATE INDEX "companies_not_seen_idx" ON "public"."companies"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "membership_programs_not_seen_idx" ON "public"."membership_programs"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "customers_not_seen_idx" ON "public"."customers"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "appointments_not_seen_idx" ON "public"."appointments"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "orders_not_seen_idx" ON "public"."orders"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "memberships_not_seen_idx" ON "public"."memberships"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "gift_certificates_not_seen_idx" ON "public"."gift_certificates"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "products_not_seen_idx" ON "public"."products"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "services_not_seen_idx" ON "public"."services"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "employees_not_seen_idx" ON "public"."employees"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "pro_patients_not_seen_idx" ON "public"."pro_patients"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "pro_event_types_not_seen_idx" ON "public"."pro_event_types"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "pro_appointments_not_seen_idx" ON "public"."pro_appointments"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "pro_waitlist_slots_not_seen_idx" ON "public"."pro_waitlist_slots"("source") WHERE "not_seen_since" IS NOT NULL;
CREATE INDEX "pro_waitlist_entries_not_seen_idx" ON "public"."pro_waitlist_entries"("source") WHERE "not_seen_since" IS NOT NULL;

-- The view runs with its owner's rights (not security_invoker): it reads
-- pmsync's bookkeeping, which analysts' roles may not read, and shows each
-- role only the sources its `pmsync grant` names (the rows of
-- pmsync.access_grants of the roles it is a member of). A role that may read
-- pmsync.sync_state itself (pmsync's own role, an administrator) sees every
-- source.
CREATE VIEW "public"."pmsync_freshness" AS
WITH "not_seen" AS (
    SELECT 'companies'::text AS table_name, source, count(*) AS n FROM "public"."companies" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'membership_programs'::text AS table_name, source, count(*) AS n FROM "public"."membership_programs" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'customers'::text AS table_name, source, count(*) AS n FROM "public"."customers" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'appointments'::text AS table_name, source, count(*) AS n FROM "public"."appointments" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'orders'::text AS table_name, source, count(*) AS n FROM "public"."orders" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'memberships'::text AS table_name, source, count(*) AS n FROM "public"."memberships" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'gift_certificates'::text AS table_name, source, count(*) AS n FROM "public"."gift_certificates" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'products'::text AS table_name, source, count(*) AS n FROM "public"."products" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'services'::text AS table_name, source, count(*) AS n FROM "public"."services" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'employees'::text AS table_name, source, count(*) AS n FROM "public"."employees" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'pro_patients'::text AS table_name, source, count(*) AS n FROM "public"."pro_patients" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'pro_event_types'::text AS table_name, source, count(*) AS n FROM "public"."pro_event_types" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'pro_appointments'::text AS table_name, source, count(*) AS n FROM "public"."pro_appointments" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'pro_waitlist_slots'::text AS table_name, source, count(*) AS n FROM "public"."pro_waitlist_slots" WHERE not_seen_since IS NOT NULL GROUP BY source
    UNION ALL
    SELECT 'pro_waitlist_entries'::text AS table_name, source, count(*) AS n FROM "public"."pro_waitlist_entries" WHERE not_seen_since IS NOT NULL GROUP BY source
), "streams" AS (
    SELECT coalesce(t.source, s.source) AS source, coalesce(t.resource, s.resource) AS resource, t.table_name, t.kind,
           t.schedule, t.target_minutes, t.floor_minutes, s.cursor, (s."window" IS NOT NULL) AS window_open
    FROM "pmsync"."stream_targets" t
    FULL JOIN "pmsync"."sync_state" s ON s.source = t.source AND s.resource = t.resource
)
SELECT
    st.source,
    st.table_name,
    st.resource,
    st.cursor AS fresh_as_of,
    (extract(epoch FROM now() - st.cursor) / 60.0)::double precision AS minutes_behind,
    st.kind AS read_as,
    st.schedule,
    st.target_minutes,
    st.floor_minutes,
    CASE WHEN st.cursor IS NULL THEN false
         WHEN coalesce(st.target_minutes, st.floor_minutes) IS NULL THEN NULL
         ELSE st.cursor >= now() - coalesce(st.target_minutes, st.floor_minutes) * interval '1 minute' END AS within_target,
    st.window_open,
    (SELECT count(*) FROM "pmsync"."webhook_events" e
     WHERE e.source = st.source AND e.resource = st.resource AND e.outcome = 'notified'
       AND e.received_at > coalesce((SELECT ss.notified_until FROM "pmsync"."stream_schedule" ss
                                     WHERE ss.source = st.source AND ss.resource = st.resource), '-infinity'))::int AS changes_waiting,
    CASE WHEN st.table_name IN ('companies', 'membership_programs', 'customers', 'appointments', 'orders', 'memberships', 'gift_certificates', 'products', 'services', 'employees', 'pro_patients', 'pro_event_types', 'pro_appointments', 'pro_waitlist_slots', 'pro_waitlist_entries') THEN coalesce(ns.n, 0)::int END AS rows_not_seen,
    (SELECT r.ended_at FROM "pmsync"."runs" r
     WHERE r.source = st.source AND r.resource = st.resource AND r.status = 'succeeded'
     ORDER BY r.started_at DESC LIMIT 1) AS last_success_at
FROM "streams" st
LEFT JOIN "not_seen" ns ON ns.source = st.source AND ns.table_name = st.table_name
WHERE has_table_privilege('"pmsync"."sync_state"'::regclass, 'SELECT')
   OR EXISTS (SELECT 1 FROM "pmsync"."access_grants" g JOIN pg_roles r ON r.rolname = g.role
              WHERE pg_has_role(r.oid, 'MEMBER') AND (g.sources IS NULL OR st.source = ANY (g.sources)));

COMMENT ON VIEW "public"."pmsync_freshness" IS 'How current each table is, per source and stream: every change before fresh_as_of is in the table. Each role sees only the sources it was granted. Cheap enough to poll every minute.';
COMMENT ON COLUMN "public"."pmsync_freshness"."source" IS 'Name of the configured source (account).';
COMMENT ON COLUMN "public"."pmsync_freshness"."table_name" IS 'The table the stream writes; null for a stream pmsync has state of but that the configuration it last ran with does not list.';
COMMENT ON COLUMN "public"."pmsync_freshness"."resource" IS 'The stream (resource name on the command line).';
COMMENT ON COLUMN "public"."pmsync_freshness"."fresh_as_of" IS 'End of the stream''s last completed window: every change made before it is in the table. Null before its first pass completes.';
COMMENT ON COLUMN "public"."pmsync_freshness"."minutes_behind" IS 'Minutes from fresh_as_of to now.';
COMMENT ON COLUMN "public"."pmsync_freshness"."read_as" IS 'incremental (changed records by ModifiedOn, or changed parents) or full (read whole).';
COMMENT ON COLUMN "public"."pmsync_freshness"."schedule" IS 'budget, a cron expression with its time zone, or off (schedules in the configuration).';
COMMENT ON COLUMN "public"."pmsync_freshness"."target_minutes" IS 'The stream''s freshness target (schedules.maxStalenessMinutes or an override); null: none.';
COMMENT ON COLUMN "public"."pmsync_freshness"."floor_minutes" IS 'The longest a budget stream waits between checks (schedules.floorHours); null for pinned and off streams.';
COMMENT ON COLUMN "public"."pmsync_freshness"."within_target" IS 'Whether fresh_as_of is within target_minutes (else floor_minutes) of now; null when the stream has neither.';
COMMENT ON COLUMN "public"."pmsync_freshness"."window_open" IS 'A window is being read (a backfill or a check in progress, or one that stopped and resumes).';
COMMENT ON COLUMN "public"."pmsync_freshness"."changes_waiting" IS 'Changes webhooks announced that no check has read yet.';
COMMENT ON COLUMN "public"."pmsync_freshness"."rows_not_seen" IS 'Rows of the source marked not seen (not_seen_since set): the API stopped returning them. Null for tables without that mark.';
COMMENT ON COLUMN "public"."pmsync_freshness"."last_success_at" IS 'When the stream''s latest successful run ended.';

-- The bookkeeping table explains itself too (npm run tables -- --migration writes these).
COMMENT ON TABLE "pmsync"."stream_targets" IS 'Per configured stream: its table, schedule and freshness target, as the configuration pmsync last ran with says (the pmsync_freshness view reads them).';
COMMENT ON COLUMN "pmsync"."stream_targets"."kind" IS 'incremental or full.';
COMMENT ON COLUMN "pmsync"."stream_targets"."schedule" IS 'budget, a cron expression with its time zone, or off.';
COMMENT ON COLUMN "pmsync"."stream_targets"."target_minutes" IS 'schedules.maxStalenessMinutes (or an override) in force; null: none.';
COMMENT ON COLUMN "pmsync"."stream_targets"."floor_minutes" IS 'schedules.floorHours in minutes, for budget streams; null otherwise.';
