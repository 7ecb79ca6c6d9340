/**
 * The alert rules and the Grafana dashboard shipped in docs/monitoring/: the
 * rules parse (YAML in Prometheus' rule-file shape, every expression with
 * Prometheus' own PromQL grammar), the dashboard is valid JSON with
 * parseable queries, and every metric either names is exported by a real
 * `serve` on /metrics.
 */
import { SCHEDULING_SHARDS } from '../../src/state/locks.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load.ts';
import { STREAM_REGISTRY } from '../../src/sync/stream-registry.ts';
import { startServe, type RunningServe } from '../../src/serve/serve.ts';
import { mountWebhooks } from '../../src/serve/webhooks.ts';
import { ROOT, writeConfig } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { openTestApp, type TestApp } from '../support/harness.ts';

const RULES = join(ROOT, 'docs/monitoring/pmsync-alerts.yml');
const DASHBOARD = join(ROOT, 'docs/monitoring/pmsync-dashboard.json');

/** Parses one PromQL expression; returns the metric names it selects, or throws at the first syntax error. */
export function metricsOf(expr: string): string[] {
  const names: string[] = [];
  const errors: number[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
      if (node.type.name === 'Identifier' && node.node.parent?.type.name === 'VectorSelector') names.push(expr.slice(node.from, node.to));
    },
  });
  if (errors.length > 0) throw new Error(`PromQL syntax error at ${errors[0]} in: ${expr}`);
  return names;
}

interface Rule {
  alert?: string;
  expr?: unknown;
  for?: unknown;
  labels?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

let db: TestDatabase;
let app: TestApp;
let serve: RunningServe;
let exported: Set<string>;

beforeAll(async () => {
  db = await createTestDatabase();
  const file = writeConfig({
    sources: [{ name: 'clinic', kind: 'core', baseUrl: 'http://127.0.0.1:9/api/v1', apikey: 'k', username: 'u', password: 'p' }],
  });
  const loaded = loadConfig(STREAM_REGISTRY, { configFile: file, env: { DATABASE_URL: db.url } });
  const config = { ...loaded, serve: { ...loaded.serve!, port: 0, host: '127.0.0.1' } };
  app = await openTestApp(config);
  // Nothing ticks: no request is sent; /metrics shows every series serve exports, the webhook ones included.
  serve = await startServe(app, config, { manualTicks: true, webhooks: mountWebhooks });
  const text = await (await fetch(`${serve.url}/metrics`)).text();
  exported = new Set();
  for (const m of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    exported.add(m[1]!);
    if (m[2] === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${m[1]}${suffix}`);
  }
});
afterAll(async () => {
  await serve?.stop();
  await app?.close();
  await db?.drop();
});

describe('Prometheus alert rules', () => {
  const doc = parseYaml(readFileSync(RULES, 'utf8')) as { groups?: Array<{ name?: string; rules?: Rule[] }> };
  const rules = (doc.groups ?? []).flatMap((g) => g.rules ?? []);

  it('parse as a rule file: named groups of alerts, each with an expression, a duration, a severity and a summary', () => {
    expect(doc.groups?.length).toBeGreaterThan(0);
    for (const g of doc.groups!) expect(g.name).toMatch(/\S/);
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const r of rules) {
      expect(r.alert).toMatch(/^Pmsync[A-Z]\w+$/);
      expect(typeof r.expr).toBe('string');
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smhd]$/);
      expect(['info', 'warning', 'critical']).toContain(r.labels?.severity);
      expect(typeof r.annotations?.summary).toBe('string');
      expect(() => metricsOf(r.expr as string), r.alert).not.toThrow();
    }
  });

  it('cover what an operator must hear about', () => {
    const byMetric = (name: string) => rules.filter((r) => metricsOf(r.expr as string).includes(name)).map((r) => r.alert);
    expect(byMetric('pmsync_quota_remaining')).toEqual(['PmsyncQuotaNearlyExhausted', 'PmsyncQuotaExhausted']);
    expect(byMetric('pmsync_stream_staleness_target_seconds')).toEqual(['PmsyncStreamStale']);
    expect(byMetric('pmsync_pinned_over_budget')).toEqual(['PmsyncPinnedOverBudget']);
    expect(byMetric('pmsync_webhook_dead_letters')).toEqual(['PmsyncDeadLetters']);
    expect(byMetric('pmsync_quarantined_records')).toEqual(['PmsyncQuarantineGrowing']);
    expect(byMetric('pmsync_ready')).toEqual(['PmsyncReplicaNotReady']);
    expect(byMetric('pmsync_run_queue_oldest_wait_seconds')).toEqual(['PmsyncRunQueueBacklog']);
    expect(byMetric('pmsync_scheduler_shards')).toEqual(['PmsyncShardsUndecided']);
    // The alert counts the shards the replicas decide against how many there are.
    expect(rules.find((r) => r.alert === 'PmsyncShardsUndecided')!.expr).toBe(`sum(pmsync_scheduler_shards) < ${SCHEDULING_SHARDS}`);
  });

  it('name only metrics that /metrics exports', () => {
    const named = new Set(rules.flatMap((r) => metricsOf(r.expr as string)));
    expect(named.size).toBeGreaterThanOrEqual(8);
    expect([...named].filter((m) => !exported.has(m))).toEqual([]);
  });

  it('a syntax error would be caught', () => {
    expect(() => metricsOf('max by (source) (pmsync_quota_remaining')).toThrow(/PromQL syntax error/);
    expect(metricsOf('rate(pmsync_runs_total{status="failed"}[5m]) > 0')).toEqual(['pmsync_runs_total']);
  });
});

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    title: string;
    uid: string;
    templating: { list: Array<{ name: string; type: string }> };
    panels: Array<{ title: string; gridPos: unknown; datasource: { uid: string }; targets: Array<{ expr: string; refId: string }> }>;
  };

  it('is a dashboard whose panels query Prometheus through a datasource variable, with queries that parse', () => {
    expect(dashboard).toMatchObject({ title: 'pmsync', uid: 'pmsync' });
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource' }));
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const p of dashboard.panels) {
      expect(p.title).toMatch(/\S/);
      expect(p.gridPos).toBeDefined();
      expect(p.datasource.uid).toBe('${datasource}');
      expect(p.targets.length).toBeGreaterThan(0);
      for (const t of p.targets) expect(() => metricsOf(t.expr), `${p.title}: ${t.expr}`).not.toThrow();
    }
  });

  it('names only metrics that /metrics exports', () => {
    const named = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricsOf(t.expr))));
    expect([...named].filter((m) => !exported.has(m))).toEqual([]);
    for (const m of [
      'pmsync_quota_used',
      'pmsync_stream_staleness_seconds',
      'pmsync_webhook_dead_letters',
      'pmsync_quarantined_records',
      'pmsync_ready',
    ]) {
      expect(named).toContain(m);
    }
  });
});
