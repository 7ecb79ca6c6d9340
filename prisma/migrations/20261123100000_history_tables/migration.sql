-- History mode (SCD type 2): one <table>_history per resource table, written
-- only for the tables a source lists in its `history` setting. A version is
-- valid from valid_from (inclusive) to valid_to (exclusive, null while
-- current); at most one version per record is current.
CREATE TABLE "public"."companies_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_name" TEXT,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "companies_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "companies_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "companies_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "companies_history_current_key" ON "public"."companies_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."membership_programs_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "program_name" TEXT,
    "description" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "membership_programs_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "membership_programs_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "membership_programs_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "membership_programs_history_current_key" ON "public"."membership_programs_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."customers_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "first_name" TEXT,
    "last_name" TEXT,
    "email" TEXT,
    "mobile_phone" TEXT,
    "is_active" BOOLEAN,
    "birthday" DATE,
    "last_visit" DATE,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "customers_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "customers_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "customers_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "customers_history_current_key" ON "public"."customers_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."appointments_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "employee_id" TEXT,
    "service_id" TEXT,
    "start_at" TIMESTAMP(3),
    "end_at" TIMESTAMP(3),
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "appointments_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "appointments_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "appointments_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "appointments_history_current_key" ON "public"."appointments_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."orders_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "order_date" TIMESTAMP(3),
    "total" DECIMAL,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "orders_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "orders_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "orders_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "orders_history_current_key" ON "public"."orders_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."memberships_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "membership_program" TEXT,
    "bill_amount" DECIMAL,
    "next_bill_date" DATE,
    "last_bill_date" DATE,
    "sold_on" DATE,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "memberships_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "memberships_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "memberships_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "memberships_history_current_key" ON "public"."memberships_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."gift_certificates_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "amount" DECIMAL,
    "balance" DECIMAL,
    "issued_on" DATE,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "gift_certificates_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "gift_certificates_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "gift_certificates_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "gift_certificates_history_current_key" ON "public"."gift_certificates_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."products_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "name" TEXT,
    "price" DECIMAL,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "products_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "products_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "products_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "products_history_current_key" ON "public"."products_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."services_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "name" TEXT,
    "price" DECIMAL,
    "duration_minutes" INTEGER,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "services_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "services_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "services_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "services_history_current_key" ON "public"."services_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."employees_history" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "company_id" TEXT,
    "first_name" TEXT,
    "last_name" TEXT,
    "email" TEXT,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "employees_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "employees_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "employees_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "employees_history_current_key" ON "public"."employees_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."pro_patients_history" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "first_name" TEXT,
    "last_name" TEXT,
    "dob" DATE,
    "cell_phone" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_patients_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "pro_patients_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "pro_patients_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "pro_patients_history_current_key" ON "public"."pro_patients_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."pro_event_types_history" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "name" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_event_types_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "pro_event_types_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "pro_event_types_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "pro_event_types_history_current_key" ON "public"."pro_event_types_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."pro_appointments_history" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "patient_id" BIGINT,
    "event_type_id" BIGINT,
    "provider_id" BIGINT,
    "appt_date" TIMESTAMP(3),
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_appointments_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "pro_appointments_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "pro_appointments_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "pro_appointments_history_current_key" ON "public"."pro_appointments_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."pro_waitlist_slots_history" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "waitlist_id" BIGINT,
    "provider_id" BIGINT,
    "event_type_id" BIGINT,
    "slot_date" TIMESTAMP(3),
    "status" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_waitlist_slots_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "pro_waitlist_slots_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "pro_waitlist_slots_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "pro_waitlist_slots_history_current_key" ON "public"."pro_waitlist_slots_history"("source", "id") WHERE "is_current";

CREATE TABLE "public"."pro_waitlist_entries_history" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "is_current" BOOLEAN NOT NULL,
    "patient_id" BIGINT,
    "patient_first_name" TEXT,
    "patient_last_name" TEXT,
    "event_type_id" BIGINT,
    "event_type_name" TEXT,
    "date_from" DATE,
    "date_to" DATE,
    "provider_ids" JSONB,
    "days_of_week" TEXT,
    "times_of_day" TEXT,
    "comments" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_waitlist_entries_history_pkey" PRIMARY KEY ("source","id","valid_from"),
    CONSTRAINT "pro_waitlist_entries_history_period" CHECK ("valid_to" IS NULL OR "valid_to" >= "valid_from"),
    CONSTRAINT "pro_waitlist_entries_history_current" CHECK ("is_current" = ("valid_to" IS NULL))
);
CREATE UNIQUE INDEX "pro_waitlist_entries_history_current_key" ON "public"."pro_waitlist_entries_history"("source", "id") WHERE "is_current";

-- Tables whose history is being kept, per source: a table enters when a run
-- first finds it listed in the source's `history` (its rows are then copied
-- in as first versions) and leaves when a run finds it no longer listed, so
-- listing it again copies in whatever changed meanwhile.
CREATE TABLE "pmsync"."history_tables" (
    "source" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "since" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "history_tables_pkey" PRIMARY KEY ("source","table_name")
);

-- "As of" queries: SELECT * FROM memberships_as_of('2026-07-01 00:00+00').
CREATE FUNCTION "public"."companies_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."companies_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."companies_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."companies_as_of"(TIMESTAMPTZ) IS 'The versions of companies pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."membership_programs_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."membership_programs_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."membership_programs_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."membership_programs_as_of"(TIMESTAMPTZ) IS 'The versions of membership_programs pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."customers_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."customers_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."customers_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."customers_as_of"(TIMESTAMPTZ) IS 'The versions of customers pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."appointments_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."appointments_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."appointments_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."appointments_as_of"(TIMESTAMPTZ) IS 'The versions of appointments pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."orders_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."orders_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."orders_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."orders_as_of"(TIMESTAMPTZ) IS 'The versions of orders pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."memberships_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."memberships_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."memberships_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."memberships_as_of"(TIMESTAMPTZ) IS 'The versions of memberships pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."gift_certificates_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."gift_certificates_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."gift_certificates_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."gift_certificates_as_of"(TIMESTAMPTZ) IS 'The versions of gift_certificates pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."products_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."products_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."products_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."products_as_of"(TIMESTAMPTZ) IS 'The versions of products pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."services_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."services_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."services_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."services_as_of"(TIMESTAMPTZ) IS 'The versions of services pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."employees_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."employees_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."employees_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."employees_as_of"(TIMESTAMPTZ) IS 'The versions of employees pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."pro_patients_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."pro_patients_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."pro_patients_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."pro_patients_as_of"(TIMESTAMPTZ) IS 'The versions of pro_patients pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."pro_event_types_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."pro_event_types_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."pro_event_types_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."pro_event_types_as_of"(TIMESTAMPTZ) IS 'The versions of pro_event_types pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."pro_appointments_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."pro_appointments_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."pro_appointments_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."pro_appointments_as_of"(TIMESTAMPTZ) IS 'The versions of pro_appointments pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."pro_waitlist_slots_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."pro_waitlist_slots_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."pro_waitlist_slots_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."pro_waitlist_slots_as_of"(TIMESTAMPTZ) IS 'The versions of pro_waitlist_slots pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';

CREATE FUNCTION "public"."pro_waitlist_entries_as_of"("at" TIMESTAMPTZ) RETURNS SETOF "public"."pro_waitlist_entries_history"
LANGUAGE sql STABLE AS $$
    SELECT * FROM "public"."pro_waitlist_entries_history" WHERE "valid_from" <= "at" AND ("valid_to" IS NULL OR "valid_to" > "at")
$$;
COMMENT ON FUNCTION "public"."pro_waitlist_entries_as_of"(TIMESTAMPTZ) IS 'The versions of pro_waitlist_entries pmsync held at that instant (history mode sources only): one row per record then current, none for records not yet stored or already marked not seen.';
