import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_CORE, DEMO_PRO, DEMO_SUBSET } from '../../simulator/index.ts';
import { ROOT } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';
import { basic, call } from './support.ts';

// The simulator's own entry point, as `npm run simulator` runs it.
const MAIN = join(ROOT, 'simulator/main.ts');

describe('simulator command', () => {
  it('serves the demo accounts with the requested sizes until SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [MAIN, '--port', '0', '--customers', '321', '--size', 'orders=7', '--no-data-headers', '--quota', '50', '--practices', '2'],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      const deadline = Date.now() + scaled(20_000);
      while (!out.includes('Press Ctrl+C') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      expect(url, out).toBeDefined();
      expect(out).toContain(`apikey=${DEMO_CORE.apikey}`);
      expect(out).toContain(`/CustomAPI/${DEMO_SUBSET.subsetName}/api/v1`);
      expect(out).toContain(`/practices/${DEMO_PRO.practiceId + 1}`);

      const auth = { authorization: `Basic ${basic(DEMO_CORE.username, DEMO_CORE.password)}` };
      const customers = await call(`${url}/api/v1/customers?apikey=${DEMO_CORE.apikey}&Rows=100&Page=4`, { headers: auth });
      expect(customers.json<unknown[]>()).toHaveLength(21);
      expect(customers.headers.datatotalrows).toBeUndefined();
      const orders = await call(`${url}/api/v1/orders?apikey=${DEMO_CORE.apikey}&Rows=100`, { headers: auth });
      expect(orders.json<unknown[]>()).toHaveLength(7);
      const stats = await call(`${url}/__sim/stats`);
      expect(stats.json<{ byApikey: Record<string, { dailyQuota: number }> }>().byApikey[DEMO_CORE.apikey]?.dailyQuota).toBe(50);
      const pro = await call(`${url}/practices/${DEMO_PRO.practiceId + 1}/event-types`, {
        headers: { authorization: `${DEMO_PRO.token}-2` },
      });
      expect(pro.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    expect(out).toContain('Simulator stopped.');
    expect(child.exitCode).toBe(0);
  });

  it('rejects a malformed --size', async () => {
    const child = spawn(process.execPath, [MAIN, '--size', 'widgets=3'], {
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).not.toBe(0);
    expect(err).toContain('RESOURCE=N');
  });
});
