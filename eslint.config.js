import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const NO_SIMULATOR = {
  group: ['**/simulator/**', '**/simulator'],
  message: 'src/ must not import the simulator (it is not in the product image).',
};
/** A folder of src/ that `from` must not import. */
const upward = (folder, from) => ({ group: [`../${folder}/**`], message: `${from} must not import src/${folder}/.` });
const NO_PG_BOSS = { name: 'pg-boss', message: 'use src/queue.ts: it owns the pg-boss instance and reads queues through its API.' };
/** The import rule of src/ (no simulator, no pg-boss but through src/queue.ts), with a part's own `patterns`. */
const srcImports = (...patterns) => ['error', { paths: [NO_PG_BOSS], patterns: [NO_SIMULATOR, ...patterns] }];

export default tseslint.config(
  { ignores: ['node_modules/', 'src/generated/', '.pmsync/', 'coverage/', 'bench/out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  // The product and the simulator stand apart: the product image carries no simulator, and the
  // simulator answers by the API contract alone. Code that needs both lives in test/, bench/, scripts/.
  // pg-boss is reached through src/queue.ts alone: one instance per App, and its public API only.
  {
    files: ['src/**'],
    rules: { 'no-restricted-imports': srcImports() },
  },
  {
    files: ['src/queue.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_SIMULATOR] }] },
  },
  // Reads for people (src/status) sit above the scheduler and below what prints them: the scheduler
  // never reports, and the CLI and serve share what they show through src/status, never each other.
  // (A later block replaces the rule for its files, so each repeats the rule of src/ through srcImports.)
  {
    files: ['src/scheduler/**'],
    rules: { 'no-restricted-imports': srcImports(upward('status', 'src/scheduler/')) },
  },
  {
    files: ['src/status/**'],
    rules: { 'no-restricted-imports': srcImports(upward('cli', 'src/status/'), upward('serve', 'src/status/')) },
  },
  {
    files: ['src/serve/**'],
    rules: { 'no-restricted-imports': srcImports(upward('cli', 'src/serve/')) },
  },
  {
    files: ['simulator/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/src/**', '**/src'], message: 'simulator/ must not import pmsync (src/): it follows the API contract only.' },
          ],
        },
      ],
    },
  },
);
