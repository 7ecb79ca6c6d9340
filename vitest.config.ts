import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.ts';
import { scaled } from './test/support/time-scale.ts';

/**
 * Three projects, chosen by file name: `*.test.ts` needs nothing but Node
 * (no PostgreSQL, no Redis, no child process), `*.int.test.ts` needs
 * PostgreSQL or another service, `*.e2e.test.ts` runs real processes.
 * Only int and e2e start the test PostgreSQL, so `npm run test:unit` runs in
 * seconds on a machine without one. Inline projects inherit the root options.
 */
const SERVICE_GLOBAL_SETUP = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    // Hang guards: PMSYNC_TEST_TIME_SCALE stretches them on a slow machine (test/support/time-scale.ts).
    testTimeout: scaled(60_000),
    hookTimeout: scaled(120_000),
    pool: 'forks',
    // Vitest's default is one file fewer than the cores: one at a time on a 2-core CI machine, where most files wait
    // on PostgreSQL, a child process or the injected clock's next tick rather than compute. Two at a time there.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Longest files first, whatever their project: a long file started last runs alone at the end.
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/**/*.int.test.ts', 'test/**/*.e2e.test.ts'],
        },
      },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          globalSetup: SERVICE_GLOBAL_SETUP,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e.test.ts'],
          globalSetup: SERVICE_GLOBAL_SETUP,
        },
      },
    ],
  },
});
