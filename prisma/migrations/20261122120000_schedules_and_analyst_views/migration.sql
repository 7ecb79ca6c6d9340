-- The scheduler's memory of fired schedules, indexes the analyst views lean on, and the views.

-- One row per schedule (source/resource): the last fire any serve process claimed.
-- Claiming a fire is one conditional UPDATE, so among several replicas exactly one runs it,
-- and fires missed while no process was up are found (and caught up once) at start-up.
CREATE TABLE "pmsync"."schedules" (
    "key" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL,
    "last_fire_at" TIMESTAMPTZ(3),
    "last_claimed_by" TEXT,
    "last_claimed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("key")
);

CREATE INDEX "appointments_source_customer_id_idx" ON "public"."appointments"("source", "customer_id");
CREATE INDEX "appointments_source_company_id_start_at_idx" ON "public"."appointments"("source", "company_id", "start_at");
CREATE INDEX "memberships_source_customer_id_idx" ON "public"."memberships"("source", "customer_id");
CREATE INDEX "membership_programs_source_name_idx" ON "public"."membership_programs"("source", lower(btrim("program_name")));

-- Memberships with the plan they belong to. The API gives a membership only the
-- program's display name; the plan itself lives in membership_programs. A membership
-- is matched to the program of the same source whose name equals its display name,
-- ignoring case and surrounding spaces. When several programs share that name, the
-- one of the membership's own company wins, then one still returned by the API, then
-- the smallest id; program_match and program_candidates say how the match was made.
CREATE VIEW "public"."membership_details" AS
SELECT
    m."source",
    m."id" AS "membership_id",
    m."customer_id",
    m."company_id",
    m."membership_program" AS "program_display_name",
    p."id" AS "membership_program_id",
    p."program_name",
    p."description" AS "program_description",
    m."bill_amount",
    m."next_bill_date",
    m."last_bill_date",
    m."sold_on",
    (m."next_bill_date" IS NOT NULL AND m."next_bill_date" >= CURRENT_DATE) AS "is_active",
    CASE
        WHEN p."id" IS NULL THEN 'none'
        WHEN c."candidates" = 1 THEN 'unique'
        WHEN c."same_company" = 1 AND p."company_id" IS NOT DISTINCT FROM m."company_id" THEN 'same_company'
        ELSE 'ambiguous'
    END AS "program_match",
    COALESCE(c."candidates", 0)::int AS "program_candidates",
    m."synced_at"
FROM "public"."memberships" m
LEFT JOIN LATERAL (
    SELECT count(*)::int AS "candidates",
           count(*) FILTER (WHERE mp."company_id" IS NOT DISTINCT FROM m."company_id")::int AS "same_company"
    FROM "public"."membership_programs" mp
    WHERE mp."source" = m."source" AND lower(btrim(mp."program_name")) = lower(btrim(m."membership_program"))
) c ON true
LEFT JOIN LATERAL (
    SELECT mp.*
    FROM "public"."membership_programs" mp
    WHERE mp."source" = m."source" AND lower(btrim(mp."program_name")) = lower(btrim(m."membership_program"))
    ORDER BY (mp."company_id" IS NOT DISTINCT FROM m."company_id") DESC, (mp."not_seen_since" IS NULL) DESC, mp."id"
    LIMIT 1
) p ON true
WHERE m."not_seen_since" IS NULL;

COMMENT ON VIEW "public"."membership_details" IS 'Memberships (enrollments) with their plan from membership_programs, matched by display name within the source. Memberships no longer returned by the API are left out.';
COMMENT ON COLUMN "public"."membership_details"."program_display_name" IS 'The program name exactly as the membership carries it (memberships.membership_program).';
COMMENT ON COLUMN "public"."membership_details"."membership_program_id" IS 'The matched program; null when no program of the source has that name.';
COMMENT ON COLUMN "public"."membership_details"."is_active" IS 'True when next_bill_date is today or later (the API has no status field); false when it is past or unset.';
COMMENT ON COLUMN "public"."membership_details"."program_match" IS 'unique: one program has the name; same_company: several have it, one in the membership''s company; ambiguous: several, picked by the tie-break; none: no program has it.';
COMMENT ON COLUMN "public"."membership_details"."program_candidates" IS 'How many programs of the source carry the display name.';

-- Customers with their last visit and whether they have an active membership.
CREATE VIEW "public"."customer_overview" AS
SELECT
    cu."source",
    cu."id" AS "customer_id",
    cu."company_id",
    cu."first_name",
    cu."last_name",
    cu."email",
    cu."mobile_phone",
    cu."is_active",
    cu."last_visit",
    a."last_appointment_at",
    a."next_appointment_at",
    COALESCE(a."appointments", 0)::int AS "appointments",
    COALESCE(ms."active_memberships", 0)::int AS "active_memberships",
    (COALESCE(ms."active_memberships", 0) > 0) AS "has_active_membership",
    ms."next_bill_date",
    cu."synced_at"
FROM "public"."customers" cu
LEFT JOIN LATERAL (
    SELECT count(*)::int AS "appointments",
           max(ap."start_at") FILTER (WHERE ap."start_at" < LOCALTIMESTAMP) AS "last_appointment_at",
           min(ap."start_at") FILTER (WHERE ap."start_at" >= LOCALTIMESTAMP) AS "next_appointment_at"
    FROM "public"."appointments" ap
    WHERE ap."source" = cu."source" AND ap."customer_id" = cu."id" AND ap."not_seen_since" IS NULL
) a ON true
LEFT JOIN LATERAL (
    SELECT count(*)::int AS "active_memberships", min(me."next_bill_date") AS "next_bill_date"
    FROM "public"."memberships" me
    WHERE me."source" = cu."source" AND me."customer_id" = cu."id" AND me."not_seen_since" IS NULL
      AND me."next_bill_date" >= CURRENT_DATE
) ms ON true
WHERE cu."not_seen_since" IS NULL;

COMMENT ON VIEW "public"."customer_overview" IS 'One row per customer still returned by the API: contact fields, last and next appointment, and active memberships.';
COMMENT ON COLUMN "public"."customer_overview"."last_visit" IS 'LastVisit as the API reports it.';
COMMENT ON COLUMN "public"."customer_overview"."last_appointment_at" IS 'Start of the latest synced appointment before now (wall-clock time of the source, compared with the database''s current local time).';
COMMENT ON COLUMN "public"."customer_overview"."next_appointment_at" IS 'Start of the earliest synced appointment from now on.';
COMMENT ON COLUMN "public"."customer_overview"."appointments" IS 'Synced appointments of the customer, past and future.';
COMMENT ON COLUMN "public"."customer_overview"."active_memberships" IS 'Memberships whose next_bill_date is today or later.';
COMMENT ON COLUMN "public"."customer_overview"."has_active_membership" IS 'True when active_memberships > 0.';
COMMENT ON COLUMN "public"."customer_overview"."next_bill_date" IS 'The earliest next_bill_date among the active memberships.';

-- Appointment counts per source, company and calendar day.
CREATE VIEW "public"."appointments_per_company_day" AS
SELECT
    ap."source",
    ap."company_id",
    co."company_name",
    ap."start_at"::date AS "day",
    count(*)::int AS "appointments",
    count(DISTINCT ap."customer_id")::int AS "customers",
    count(DISTINCT ap."employee_id")::int AS "employees"
FROM "public"."appointments" ap
LEFT JOIN "public"."companies" co ON co."source" = ap."source" AND co."id" = ap."company_id"
WHERE ap."not_seen_since" IS NULL AND ap."start_at" IS NOT NULL
GROUP BY ap."source", ap."company_id", co."company_name", ap."start_at"::date;

COMMENT ON VIEW "public"."appointments_per_company_day" IS 'Appointments per source, company and day (the date of start_at, in the source''s wall-clock time). Appointments no longer returned by the API are left out.';
COMMENT ON COLUMN "public"."appointments_per_company_day"."company_name" IS 'From companies; null when the company is not synced.';
COMMENT ON COLUMN "public"."appointments_per_company_day"."customers" IS 'Distinct customers with an appointment that day.';
COMMENT ON COLUMN "public"."appointments_per_company_day"."employees" IS 'Distinct employees with an appointment that day.';
