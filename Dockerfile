# pmsync image: `pmsync serve` by default (scheduler, webhook receiver, /healthz, /readyz, /metrics).
#   docker build -t pmsync .
#   docker run --env-file .env -p 8080:8080 pmsync            # serve
#   docker run --env-file .env pmsync sync                    # one pass, then exit
# The Node major matches package.json ("engines" and the pinned "node" devDependency).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- dependencies: production packages only, exactly as locked ----
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Left out: dev tools, optional and peer packages (the embedded PostgreSQL binaries, the Prisma
# CLI): a container always uses DATABASE_URL and applies migrations with pmsync's own migrator.
# Install scripts are skipped: pmsync's own only generates a Prisma client that tests use.
RUN npm ci --omit=dev --omit=optional --omit=peer --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# ---- simulator: the local Core, Subset and Pro APIs, for compose's demo profile only ----
#   docker build --target simulator -t pmsync-simulator .
# An image of its own, so the pmsync image below carries no simulator/ (README, "Why the product
# image does not carry the simulator"). It shares the locked production packages of "deps".
FROM ${NODE_IMAGE} AS simulator
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY simulator ./simulator
USER node
EXPOSE 4010
ENTRYPOINT ["node", "simulator/main.ts"]
CMD ["--host", "0.0.0.0", "--port", "4010"]

# ---- runtime: pmsync's source files and production dependencies, run as the unprivileged "node" user ----
# The last stage, so a plain `docker build` gives this image; it copies only what pmsync runs.
FROM ${NODE_IMAGE} AS runtime
# The entrypoint gives Node pmsync's heap flags, as bin/pmsync.js's shebang and `npm run pmsync` do
# (src/cli/process.ts): a 1,000,000-row sync stays under 256 MB of RSS, and the heap keeps Node's own
# limit, sized from the container's memory (bench/RESULTS.md, "The launcher: start-up flags against a worker thread").
ENV NODE_ENV=production \
    MALLOC_MMAP_THRESHOLD_=131072 \
    PMSYNC_DATA_DIR=/home/node/.pmsync \
    PMSYNC_HOST=0.0.0.0 \
    PMSYNC_PORT=8080
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY prisma ./prisma
COPY src ./src
USER node
EXPOSE 8080
# Liveness only (the process answers); readiness (database, migrations) is /readyz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PMSYNC_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node is PID 1 and passes SIGTERM to the command: in-flight pages commit, then it exits (serve.shutdownTimeoutSeconds).
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=100", "bin/pmsync.js"]
CMD ["serve"]
