/**
 * What the container runs, run here without Docker: the image's entry point
 * and default command with the environment of .env.example, probed by the
 * exact health-check commands of the Dockerfile and of docker-compose.yml.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEMO_CORE, startSimulator, type Simulator } from '../../simulator/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { ROOT } from '../support/cli.ts';
import { eventually } from './support.ts';

const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');
let sim: Simulator;
let db: TestDatabase;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The Dockerfile's stages, continuation lines joined, each from its FROM line on; the last is pmsync's image. */
function stages(): string[] {
  return read('Dockerfile')
    .replace(/\\\n\s*/g, ' ')
    .split(/^(?=FROM )/m)
    .slice(1);
}

function run(cmd: string[], env: NodeJS.ProcessEnv): Promise<number | null> {
  return new Promise((resolve) => spawn(process.execPath, cmd.slice(1), { env, stdio: 'ignore' }).on('exit', resolve));
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 2, tenants: [{ ...DEMO_CORE, sizes: { customers: 50 } }] });
  db = await createTestDatabase();
});
afterAll(async () => {
  await sim?.close();
  await db?.drop();
});

describe('the image entry point', () => {
  it('serves with the .env.example settings, passes both health checks, and stops cleanly on SIGTERM', async () => {
    const dockerfile = stages().at(-1)!;
    const entry = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)![1]!) as string[];
    const cmd = JSON.parse(/^CMD (.*)$/m.exec(dockerfile)![1]!) as string[];
    const imageHealth = JSON.parse(/^HEALTHCHECK .*? CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: { pmsync: { healthcheck: { test: string[] } } } };

    const example = Object.fromEntries(
      read('.env.example')
        .split('\n')
        .flatMap((l) => (/^[A-Z0-9_]+=/.test(l) ? [l.split(/=(.*)/s).slice(0, 2) as [string, string]] : [])),
    );
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...example,
      CORE_BASE_URL: sim.coreBaseUrl(),
      CORE_APIKEY: DEMO_CORE.apikey,
      CORE_USERNAME: DEMO_CORE.username,
      CORE_PASSWORD: DEMO_CORE.password,
      DATABASE_URL: db.url,
      // What the image's ENV sets.
      NODE_ENV: 'production',
      PMSYNC_HOST: '127.0.0.1',
      PMSYNC_PORT: String(port),
      PMSYNC_DATA_DIR: mkdtempSync(join(tmpdir(), 'pmsync-image-')),
      LOG_LEVEL: 'warn',
    };
    expect(entry[0]).toBe('node');
    const child = spawn(process.execPath, [...entry.slice(1), ...cmd], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await eventually(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          )) || undefined,
        `serve to listen (${stderr})`,
      );
      expect(imageHealth[0]).toBe('node');
      expect(await run(imageHealth, env)).toBe(0);
      const composeHealth = compose.services.pmsync.healthcheck.test.slice(1).map((a) => a.replace(':8080/', `:${port}/`));
      expect(await run(composeHealth, env)).toBe(0);
      await eventually(
        async () => ((await db.pool.query(`SELECT 1 FROM customers LIMIT 1`)).rowCount ? true : undefined),
        'the first sync',
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    // With nothing listening, the health check fails.
    expect(await run(imageHealth, env)).toBe(1);
  });
});

describe('the simulator image entry point', () => {
  it("runs compose's simulator command, passes its health check, serves the demo account and stops on SIGTERM", async () => {
    const stage = stages().find((text) => /^FROM \S+ AS simulator$/m.test(text))!;
    const entry = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(stage)![1]!) as string[];
    const compose = parse(read('docker-compose.yml'), { merge: true }) as {
      services: { simulator: { command: string[]; healthcheck: { test: string[] } } };
    };
    const port = await freePort();
    const command = compose.services.simulator.command.map((a) => (a === '4010' ? String(port) : a === '0.0.0.0' ? '127.0.0.1' : a));
    expect(command).toContain(String(port));
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' };
    expect(entry[0]).toBe('node');
    const child = spawn(process.execPath, [...entry.slice(1), ...command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const health = compose.services.simulator.healthcheck.test.slice(1).map((a) => a.replace(':4010/', `:${port}/`));
    try {
      await eventually(async () => ((await run(health, env)) === 0 ? true : undefined), `the simulator to answer (${output})`);
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/customers?apikey=${DEMO_CORE.apikey}&Rows=5`, {
        headers: { authorization: `Basic ${Buffer.from(`${DEMO_CORE.username}:${DEMO_CORE.password}`).toString('base64')}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as unknown[]).length).toBe(5);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(output).toContain('Simulator stopped.');
  });
});
