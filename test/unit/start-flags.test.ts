/**
 * pmsync's heap flags are start-up flags, written where pmsync is started:
 * the bin's shebang, the npm scripts and the image's entrypoint. They must
 * say the same, and none may cap the old generation (src/cli/process.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { START_ENV, START_FLAGS } from '../../src/cli/process.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The flags between `node` and the script it starts, in a command line. */
function flagsBefore(command: string, script: string): string[] {
  const words = command.split(/\s+/);
  const at = words.indexOf(script);
  expect(at, `${script} in "${command}"`).toBeGreaterThan(0);
  const node = words.slice(0, at).findLastIndex((w) => /(^|\/)node$/.test(w));
  expect(node, `node before ${script} in "${command}"`).toBeGreaterThanOrEqual(0);
  return words.slice(node + 1, at);
}

describe('the heap flags pmsync starts with', () => {
  it('are the same in the shebang, the npm scripts and the image', () => {
    const shebang = read('bin/pmsync.js').split('\n')[0]!;
    const env = Object.entries(START_ENV)
      .map(([k, v]) => `${k}=${v} `)
      .join('');
    expect(shebang.startsWith(`#!/usr/bin/env -S ${env}node `)).toBe(true);
    expect(shebang.slice(`#!/usr/bin/env -S ${env}node `.length).split(' ')).toEqual(START_FLAGS);

    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(flagsBefore(scripts.pmsync!, 'bin/pmsync.js')).toEqual(START_FLAGS);
    expect(flagsBefore(scripts.demo!, 'scripts/demo.ts')).toEqual(START_FLAGS);

    const entrypoints = [...read('Dockerfile').matchAll(/^ENTRYPOINT (\[.*\])$/gm)].map((m) => JSON.parse(m[1]!) as string[]);
    const pmsync = entrypoints.find((e) => e.at(-1) === 'bin/pmsync.js');
    expect(pmsync).toEqual(['node', ...START_FLAGS, 'bin/pmsync.js']);
    // The image's runtime stage sets the allocator's environment as the shebang does.
    for (const [k, v] of Object.entries(START_ENV)) expect(read('Dockerfile')).toMatch(new RegExp(`^\\s+${k}=${v} \\\\$`, 'm'));
  });

  it('leave the heap limit to Node: no ceiling on the old generation or the whole heap', () => {
    expect(START_FLAGS.filter((f) => /^--max-(old-space|heap)-size/.test(f))).toEqual([]);
  });
});
