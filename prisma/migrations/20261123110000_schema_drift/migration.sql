-- Schema drift (src/sync/drift.ts): what pmsync has seen of each table's raw
-- records, per source, and the findings reported from it.
CREATE TABLE "pmsync"."raw_fields" (
    "source" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "field" TEXT NOT NULL,
    "baseline_types" JSONB NOT NULL,
    "last_types" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "missing_records" BIGINT NOT NULL DEFAULT 0,
    "missing_in_full_pass" BOOLEAN NOT NULL DEFAULT false,
    "last_records" INTEGER NOT NULL DEFAULT 0,
    "last_present" INTEGER NOT NULL DEFAULT 0,
    "last_non_null" INTEGER NOT NULL DEFAULT 0,
    "seen_share" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "raw_fields_pkey" PRIMARY KEY ("source","table_name","field")
);

CREATE TABLE "pmsync"."column_fill" (
    "source" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "column_name" TEXT NOT NULL,
    "null_streak" BIGINT NOT NULL DEFAULT 0,
    "null_in_full_pass" BOOLEAN NOT NULL DEFAULT false,
    "last_filled_at" TIMESTAMPTZ(3),

    CONSTRAINT "column_fill_pkey" PRIMARY KEY ("source","table_name","column_name")
);

CREATE TABLE "pmsync"."schema_drift" (
    "source" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "detail" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schema_drift_pkey" PRIMARY KEY ("source","table_name","kind","subject")
);

-- A typed column's value from a raw JSON value, as the mappers derive it (src/mappers/common.ts),
-- for `pmsync repopulate`: null where the mappers would refuse the value.
CREATE FUNCTION "pmsync"."raw_text"("v" JSONB) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END
$$;

CREATE FUNCTION "pmsync"."raw_boolean"("v" JSONB) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'boolean' THEN (v #>> '{}')::boolean END
$$;

CREATE FUNCTION "pmsync"."raw_numeric"("v" JSONB) RETURNS NUMERIC LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(v) = 'number' THEN (v #>> '{}')::numeric
        WHEN jsonb_typeof(v) = 'string' AND (v #>> '{}') ~ '^-?\d+(\.\d+)?$' THEN (v #>> '{}')::numeric
    END
$$;

CREATE FUNCTION "pmsync"."raw_bigint"("v" JSONB) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(v) = 'number' AND (v #>> '{}')::numeric = trunc((v #>> '{}')::numeric)
             AND abs((v #>> '{}')::numeric) <= 9007199254740991 THEN (v #>> '{}')::numeric::bigint
    END
$$;

CREATE FUNCTION "pmsync"."raw_integer"("v" JSONB) RETURNS INTEGER LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(v) = 'number' AND (v #>> '{}')::numeric = trunc((v #>> '{}')::numeric)
             AND abs((v #>> '{}')::numeric) <= 2147483647 THEN (v #>> '{}')::numeric::integer
    END
$$;

CREATE FUNCTION "pmsync"."raw_jsonb"("v" JSONB) RETURNS JSONB LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(v) <> 'null' THEN v END
$$;

-- A date, or a date-time whose date part is used.
CREATE FUNCTION "pmsync"."raw_date"("v" JSONB) RETURNS DATE LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    s TEXT := CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END;
BEGIN
    IF s IS NULL OR s !~ '^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$' THEN
        RETURN NULL;
    END IF;
    RETURN left(s, 10)::date;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

-- Wall-clock time as sent; a value with a zone or offset converted to UTC (milliseconds kept).
CREATE FUNCTION "pmsync"."raw_timestamp"("v" JSONB) RETURNS TIMESTAMP LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    s TEXT := CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END;
BEGIN
    IF s IS NULL THEN
        RETURN NULL;
    END IF;
    IF s ~ '^\d{4}-\d{2}-\d{2}$' THEN
        RETURN s::date::timestamp;
    END IF;
    IF s !~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$' OR substr(s, 12, 2)::int > 23 THEN
        RETURN NULL;
    END IF;
    IF s ~ '(Z|[+-]\d{2}:?\d{2})$' THEN
        RETURN date_trunc('milliseconds', s::timestamptz AT TIME ZONE 'UTC');
    END IF;
    RETURN s::timestamp;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
