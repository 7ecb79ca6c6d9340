-- Core and Subset resource tables, and pmsync bookkeeping.
CREATE SCHEMA IF NOT EXISTS "pmsync";
CREATE TABLE "public"."companies" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_name" TEXT,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "companies_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."customers" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
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
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "customers_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."appointments" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
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
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "appointments_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."orders" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "order_date" TIMESTAMP(3),
    "total" DECIMAL,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "orders_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."memberships" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
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
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "memberships_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."membership_programs" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "program_name" TEXT,
    "description" TEXT,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "membership_programs_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."gift_certificates" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "customer_id" TEXT,
    "amount" DECIMAL,
    "balance" DECIMAL,
    "issued_on" DATE,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "gift_certificates_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."products" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "name" TEXT,
    "price" DECIMAL,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "products_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."services" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "name" TEXT,
    "price" DECIMAL,
    "duration_minutes" INTEGER,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "services_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "public"."employees" (
    "source" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "company_id" TEXT,
    "first_name" TEXT,
    "last_name" TEXT,
    "email" TEXT,
    "is_active" BOOLEAN,
    "raw" JSONB NOT NULL,
    "content_hash" TEXT NOT NULL,
    "source_modified_at" TIMESTAMP(3),
    "fetched_at" TIMESTAMPTZ(3) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "run_id" BIGINT,
    "not_seen_since" TIMESTAMPTZ(3),

    CONSTRAINT "employees_pkey" PRIMARY KEY ("source","id")
);

CREATE TABLE "pmsync"."sync_state" (
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "cursor" TIMESTAMPTZ(3),
    "window" JSONB,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sync_state_pkey" PRIMARY KEY ("source","resource")
);

CREATE TABLE "pmsync"."runs" (
    "id" BIGSERIAL NOT NULL,
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),
    "window_start" TIMESTAMPTZ(3),
    "window_end" TIMESTAMPTZ(3),
    "pages" INTEGER NOT NULL DEFAULT 0,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "inserted" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "unchanged" INTEGER NOT NULL DEFAULT 0,
    "rejected" INTEGER NOT NULL DEFAULT 0,
    "error_code" TEXT,
    "error_message" TEXT,

    CONSTRAINT "runs_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "pmsync"."quarantine" (
    "id" BIGSERIAL NOT NULL,
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "record_id" TEXT,
    "raw" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "run_id" BIGINT,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "quarantine_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "pmsync"."quota_usage" (
    "key_id" TEXT NOT NULL,
    "quota_day" DATE NOT NULL,
    "used" INTEGER NOT NULL DEFAULT 0,
    "daily_limit" INTEGER NOT NULL,
    "exhausted_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "quota_usage_pkey" PRIMARY KEY ("key_id","quota_day")
);

CREATE INDEX "runs_source_resource_started_at_idx" ON "pmsync"."runs"("source", "resource", "started_at");

CREATE UNIQUE INDEX "quarantine_source_resource_record_id_key" ON "pmsync"."quarantine"("source", "resource", "record_id");
