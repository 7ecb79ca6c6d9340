-- The database roles `pmsync grant` gave read access to the analysts' tables:
-- per role, the sources whose rows it may see (NULL: every source) and
-- whether pmsync created the role (only then does --revoke drop it). pmsync
-- re-applies every grant after a migration adds tables, so a new resource
-- table is covered by the same privileges and row-level security at once.
CREATE TABLE "pmsync"."access_grants" (
    "role" TEXT NOT NULL,
    "sources" TEXT[],
    "created_role" BOOLEAN NOT NULL DEFAULT false,
    "granted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "access_grants_pkey" PRIMARY KEY ("role")
);
