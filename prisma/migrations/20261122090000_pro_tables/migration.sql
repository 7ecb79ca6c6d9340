-- Pro API tables: entities keyed by (source, id) with integer ids, and append-only availability snapshots.
CREATE TABLE "public"."pro_patients" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "first_name" TEXT,
    "last_name" TEXT,
    "dob" DATE,
    "cell_phone" TEXT,
    "appointments_read_hash" TEXT,
    "appointments_read_at" TIMESTAMPTZ(3),
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "pro_patients_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."pro_appointments" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "patient_id" BIGINT,
    "event_type_id" BIGINT,
    "provider_id" BIGINT,
    "appt_date" TIMESTAMP(3),
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "pro_appointments_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."pro_event_types" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "name" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "pro_event_types_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."pro_waitlist_slots" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "waitlist_id" BIGINT,
    "provider_id" BIGINT,
    "event_type_id" BIGINT,
    "slot_date" TIMESTAMP(3),
    "status" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "pro_waitlist_slots_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."pro_waitlist_entries" (
    "source" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
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
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "pro_waitlist_entries_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."pro_availability_captures" (
    "source" TEXT NOT NULL,
    "captured_at" TIMESTAMPTZ(3) NOT NULL,
    "horizon_start" DATE NOT NULL,
    "horizon_end" DATE NOT NULL,
    "event_types" INTEGER NOT NULL DEFAULT 0,
    "providers" INTEGER NOT NULL DEFAULT 0,
    "slots" INTEGER NOT NULL DEFAULT 0,
    "completed_at" TIMESTAMPTZ(3),
    "run_id" BIGINT,

    CONSTRAINT "pro_availability_captures_pkey" PRIMARY KEY ("source","captured_at")
);

CREATE TABLE "public"."pro_availability_providers" (
    "source" TEXT NOT NULL,
    "captured_at" TIMESTAMPTZ(3) NOT NULL,
    "event_type_id" BIGINT NOT NULL,
    "provider_id" BIGINT NOT NULL,
    "first_name" TEXT,
    "last_name" TEXT,
    "open_slots" INTEGER NOT NULL,
    "raw" JSONB NOT NULL,
    "slots_raw" JSONB NOT NULL,
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_availability_providers_pkey" PRIMARY KEY ("source","captured_at","event_type_id","provider_id")
);

CREATE TABLE "public"."pro_availability_slots" (
    "source" TEXT NOT NULL,
    "captured_at" TIMESTAMPTZ(3) NOT NULL,
    "event_type_id" BIGINT NOT NULL,
    "provider_id" BIGINT NOT NULL,
    "slot_at" TIMESTAMP(3) NOT NULL,
    "run_id" BIGINT,

    CONSTRAINT "pro_availability_slots_pkey" PRIMARY KEY ("source","captured_at","event_type_id","provider_id","slot_at")
);

CREATE INDEX "pro_appointments_source_patient_id_idx" ON "public"."pro_appointments"("source", "patient_id");
