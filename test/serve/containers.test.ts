/**
 * The container files, checked without a Docker engine: the Dockerfile's base,
 * user, entry point and health check, and the simulator's separate stage; the compose services and profiles; and
 * .env.example against what pmsync and compose actually read.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { START_FLAGS } from '../../src/cli/process.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { ROOT } from '../support/cli.ts';

const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');

/** Dockerfile instructions, continuation lines joined. */
function instructions(text: string): Array<{ op: string; args: string; stage: number }> {
  const out: Array<{ op: string; args: string; stage: number }> = [];
  let stage = -1;
  for (const line of text.replace(/\\\n\s*/g, ' ').split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    if (m[1] === 'FROM') stage += 1;
    out.push({ op: m[1]!, args: m[2]!.trim(), stage });
  }
  return out;
}

function envExample(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of read('.env.example').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

describe('Dockerfile', () => {
  const steps = instructions(read('Dockerfile'));
  const finalStage = Math.max(...steps.map((s) => s.stage));
  const last = steps.filter((s) => s.stage === finalStage);

  it('builds in stages on the Node major the project pins', () => {
    const pinned = (JSON.parse(read('package.json')) as { devDependencies: Record<string, string> }).devDependencies
      .node!.replace(/^\D*/, '')
      .split('.')[0];
    const arg = steps.find((s) => s.op === 'ARG' && s.args.startsWith('NODE_IMAGE='))!.args.split('=')[1]!;
    expect(arg).toMatch(new RegExp(`^node:${pinned}(-|$)`));
    expect(steps.filter((s) => s.op === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(steps.some((s) => s.op === 'RUN' && /\bnpm ci\b.*--omit=dev/.test(s.args))).toBe(true);
  });

  it('runs as a non-root user, serve by default, with a health check on /healthz', () => {
    expect(last.find((s) => s.op === 'USER')?.args).toBe('node');
    expect(JSON.parse(last.find((s) => s.op === 'ENTRYPOINT')!.args)).toEqual(['node', ...START_FLAGS, 'bin/pmsync.js']);
    expect(JSON.parse(last.find((s) => s.op === 'CMD')!.args)).toEqual(['serve']);
    expect(last.find((s) => s.op === 'HEALTHCHECK')!.args).toMatch(/CMD \[.*\/healthz/);
  });

  it('copies only paths that exist, and keeps secrets and local state out of the build context', () => {
    for (const s of steps.filter((x) => x.op === 'COPY' && !x.args.startsWith('--from'))) {
      for (const src of s.args.split(/\s+/).slice(0, -1)) expect(existsSync(join(ROOT, src)), src).toBe(true);
    }
    const ignored = read('.dockerignore').split('\n');
    for (const p of ['.env', '.git', 'node_modules', '.pmsync']) expect(ignored).toContain(p);
  });

  it('keeps the simulator out of the pmsync image, in a stage of its own built before it', () => {
    // The final (pmsync) stage copies only what pmsync runs, and none of it holds the simulator.
    const copied = last.filter((s) => s.op === 'COPY').map((s) => s.args);
    expect(copied).toEqual([
      '--from=deps /app/node_modules ./node_modules',
      'package.json package-lock.json ./',
      'bin ./bin',
      'prisma ./prisma',
      'src ./src',
    ]);
    expect(existsSync(join(ROOT, 'src/simulator'))).toBe(false);
    expect(readdirSync(join(ROOT, 'src'), { recursive: true }).filter((f) => /simulat/i.test(String(f)))).toEqual([]);

    const from = steps.find((s) => s.op === 'FROM' && /\sAS simulator$/i.test(s.args))!;
    expect(from.stage).toBeLessThan(finalStage);
    const sim = steps.filter((s) => s.stage === from.stage);
    expect(sim.filter((s) => s.op === 'COPY').map((s) => s.args)).toContain('simulator ./simulator');
    expect(sim.find((s) => s.op === 'USER')?.args).toBe('node');
    expect(JSON.parse(sim.find((s) => s.op === 'ENTRYPOINT')!.args)).toEqual(['node', 'simulator/main.ts']);
    // The simulator stage needs simulator/ in the build context.
    expect(read('.dockerignore').split('\n')).not.toContain('simulator');
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as {
    services: Record<
      string,
      {
        command?: string[];
        profiles?: string[];
        healthcheck?: { test: string[] };
        depends_on?: Record<string, { condition: string }>;
        network_mode?: string;
        environment?: Record<string, string>;
        stop_grace_period?: string;
        image?: string;
        build?: string | { context: string; target?: string };
      }
    >;
  };
  const s = compose.services;

  it('runs postgres and pmsync serve with health checks, serve waiting for a healthy database', () => {
    expect(s.postgres!.healthcheck!.test.join(' ')).toMatch(/pg_isready/);
    expect(s.pmsync!.command).toEqual(['serve']);
    expect(s.pmsync!.profiles).toBeUndefined();
    expect(s.pmsync!.healthcheck!.test.join(' ')).toMatch(/\/readyz/);
    expect(s.pmsync!.depends_on!.postgres!.condition).toBe('service_healthy');
    expect(s.pmsync!.environment!.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
    // Longer than the 30 s serve gives in-flight pages.
    expect(Number(/^(\d+)s$/.exec(s.pmsync!.stop_grace_period!)![1])).toBeGreaterThan(30);
  });

  it('has a one-shot sync under the cron profile and the simulator under the demo profile', () => {
    expect(s['pmsync-sync']).toMatchObject({ command: ['sync'], profiles: ['cron'] });
    expect(s.simulator!.profiles).toEqual(['demo']);
    // The simulator image (the Dockerfile's "simulator" stage), not pmsync's, whose entry point runs simulator/main.ts.
    expect(s.simulator!.build).toEqual({ context: '.', target: 'simulator' });
    expect(s.simulator!.image).not.toBe(s.pmsync!.image);
    expect(s.simulator!.command!.slice(0, 2)).toEqual(['--host', '0.0.0.0']);
    expect(s['pmsync-demo']).toMatchObject({ command: ['serve'], profiles: ['demo'], network_mode: 'service:simulator' });
    expect(s['pmsync-demo']!.environment!.CORE_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:4010\/api\/v1$/);
  });

  it('interpolates only variables .env.example documents', () => {
    const used = new Set([...read('docker-compose.yml').matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]!));
    const documented = Object.keys(envExample());
    expect([...used].filter((v) => !documented.includes(v))).toEqual([]);
  });
});

describe('.env.example', () => {
  it('is a configuration pmsync accepts once the credentials are filled in, with the documented defaults', () => {
    const env = {
      ...envExample(),
      CORE_APIKEY: 'k',
      CORE_USERNAME: 'u',
      CORE_PASSWORD: 'p',
      DATABASE_URL: 'postgres://u:p@db:5432/pmsync',
    };
    const config = loadConfig(STREAM_REGISTRY, { env });
    expect(config.sources.map((x) => [x.name, x.kind])).toEqual([['core', 'core']]);
    // Every stream by budget: pins are commented examples only (they would replace the budget).
    expect(config.schedules).toMatchObject({ incremental: 'budget', full: 'budget', budget: '15%', catchUp: true });
    expect(config.serve).toMatchObject({ shutdownTimeoutSeconds: 30, lockWaitSeconds: 120 });
  });
});
