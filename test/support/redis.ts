/**
 * Provides one Redis for the whole test run, in this order: REDIS_URL when
 * set; else the Redis on 127.0.0.1:6379 when it answers PING; else a
 * testcontainers Redis when a Docker engine answers; else `redis-server` from
 * PATH, started on a free port in a temporary folder.
 *
 * When none of them works: in CI (CI=true) it throws, so the run fails
 * instead of skipping the Redis tests (.ci/run starts a redis-server first).
 * Outside CI, on a machine with only Node and npm, the run goes on: the
 * tests that need Redis are skipped, each saying why, and this warning names
 * what to install or set.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { redactUrl } from '../../src/redact.ts';
import { scaled } from './time-scale.ts';

export interface ProvidedRedis {
  url: string;
  /** Where it came from: REDIS_URL, local, testcontainers or redis-server. */
  provider: string;
  stop: () => Promise<void>;
}

export interface ProvideRedisOptions {
  env?: NodeJS.ProcessEnv;
  /** The Redis tried after REDIS_URL. */
  localUrl?: string;
}

const LOCAL_URL = 'redis://127.0.0.1:6379';
/** Docker offline cannot pull redis:7-alpine; give up on it quickly. */
const CONTAINER_TIMEOUT_MS = scaled(20_000);
const SERVER_START_TIMEOUT_MS = scaled(10_000);

const noop = async () => undefined;

/** True when a Redis at `url` answers PING (with the URL's credentials). */
export async function redisAnswers(url: string, timeoutMs = scaled(1_000)): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000}s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function tryTestcontainers(env: NodeJS.ProcessEnv): Promise<ProvidedRedis | null> {
  if (!env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return null;
  try {
    const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
    await withTimeout(getContainerRuntimeClient(), scaled(5_000), 'Docker');
    const starting = new GenericContainer('redis:7-alpine')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start();
    // A container that starts after we gave up must not be left running.
    const started = await withTimeout(starting, CONTAINER_TIMEOUT_MS, 'redis:7-alpine').catch((err: unknown) => {
      starting.then((c) => c.stop()).catch(() => undefined);
      throw err;
    });
    return {
      url: `redis://${started.getHost()}:${started.getMappedPort(6379)}`,
      provider: 'testcontainers',
      stop: async () => void (await started.stop()),
    };
  } catch {
    return null;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function tryRedisServer(): Promise<ProvidedRedis | null> {
  const dir = mkdtempSync(join(tmpdir(), 'pmsync-test-redis-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  let port: number;
  try {
    port = await freePort();
  } catch {
    cleanup();
    return null;
  }
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    // ENOENT: no redis-server on PATH.
    child.once('error', () => resolve());
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) child.kill('SIGTERM');
    await withTimeout(exited, 5_000, 'redis-server exit').catch(() => child.kill('SIGKILL'));
    cleanup();
  };
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + SERVER_START_TIMEOUT_MS;
  while (Date.now() < deadline && child.exitCode === null && child.pid !== undefined) {
    if (await redisAnswers(url, 500)) return { url, provider: 'redis-server', stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  return null;
}

export async function provideRedis(options: ProvideRedisOptions = {}): Promise<ProvidedRedis> {
  const env = options.env ?? process.env;
  if (env.REDIS_URL) {
    if (await redisAnswers(env.REDIS_URL, scaled(5_000))) return { url: env.REDIS_URL, provider: 'REDIS_URL', stop: noop };
    throw new Error(`REDIS_URL is set but no Redis answers PING at ${redactUrl(env.REDIS_URL)}.`);
  }
  const localUrl = options.localUrl ?? LOCAL_URL;
  if (await redisAnswers(localUrl)) return { url: localUrl, provider: 'local', stop: noop };
  const provided = (await tryTestcontainers(env)) ?? (await tryRedisServer());
  if (provided) return provided;
  const how =
    'install Redis (Debian: apt-get install redis-server) so `redis-server` is on PATH, start one on 127.0.0.1:6379, ' +
    'set REDIS_URL=redis://host:port to an existing one, or run a Docker engine for testcontainers';
  if (env.CI === 'true') throw new Error(`No Redis for the limiter tests in CI: .ci/run starts Debian's redis-server; ${how}.`);
  const reason = `no Redis could be found or started: ${how}`;
  process.stderr.write(`\nWARNING: the tests of the limiter shared through Redis are skipped: ${reason}. In CI they fail instead.\n\n`);
  return { url: '', provider: `unavailable (${reason})`, stop: noop };
}
