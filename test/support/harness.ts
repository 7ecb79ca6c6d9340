/**
 * In-process pieces for quota and recovery tests: a clock both the simulator
 * and pmsync read, a config parsed by the real loader, and an app whose log
 * lines are kept for inspection.
 */
import { Writable } from 'node:stream';
import { openApp, type App, type OpenOptions } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { type Config, type CoreSourceConfig } from '../../src/config/schema.ts';
import type { Simulator } from '../../simulator/index.ts';
import { writeConfig } from './cli.ts';

/** A frozen clock that tests move by hand, so quota days and windows are exact. */
export class TestClock {
  ms: number;
  constructor(iso: string) {
    this.ms = Date.parse(iso);
  }
  now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  iso(): string {
    return new Date(this.ms).toISOString();
  }
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export interface Credentials {
  apikey: string;
  username: string;
  password: string;
}

/** A Core source entry as an operator writes it in the config file. */
export function coreEntry(sim: Simulator, name: string, c: Credentials, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, kind: 'core', baseUrl: sim.coreBaseUrl(), apikey: c.apikey, username: c.username, password: c.password, ...extra };
}

/** Parses sources with the real loader; `tweak` may then set values the schema would refuse (tiny timeouts). */
export function loadTestConfig(
  databaseUrl: string,
  sources: Array<Record<string, unknown>>,
  tweak?: (s: CoreSourceConfig) => void,
): Config {
  const file = writeConfig({ sources });
  const config = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' } });
  if (tweak) for (const s of config.sources) if (s.kind === 'core') tweak(s);
  return config;
}

export interface TestApp extends App {
  logs: string[];
}

export async function openTestApp(config: Config, options: OpenOptions = {}): Promise<TestApp> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const app = await openApp(config, { ...options, logDestination: destination });
  return Object.assign(app, { logs });
}

/** Requests the simulator logged for one apikey (all of them, faults included) per UTC quota day. */
export function requestsPerDay(sim: Simulator, apikey: string, resetHourUtc = 0): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sim.stats().requests) {
    if (r.apikey !== undefined && r.apikey !== apikey) continue;
    const day = new Date(r.at.getTime() - resetHourUtc * HOUR).toISOString().slice(0, 10);
    out.set(day, (out.get(day) ?? 0) + 1);
  }
  return out;
}
