import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const NO_SIMULATOR = {
  group: ['**/simulator/**', '**/simulator'],
  message: 'src/ must not import the simulator (it is not in the product image).',
};
/**
 * The layers of src/, bottom to top. A unit (a folder of src/, or a loose file of it) may import units
 * of its own layer and of the layers below, never one above: a record's path reads straight down, and
 * nothing loops back (README.md, "Architecture"). Type-only imports keep the same order: a type lives in
 * the layer that owns it, and a lower layer that needs part of a type from above declares that part
 * itself. `await import()` is not checked. src/queue.ts
 * holds pg-boss on top of db/pool. The rule is typescript-eslint's no-restricted-imports, apart from
 * ESLint's own that keeps the simulator out, so neither block replaces the other.
 */
const LAYERS = [
  ['time.ts', 'cron.ts', 'errors.ts', 'redact.ts', 'log-format.ts', 'log.ts', 'strict-schema.ts'],
  ['config'],
  ['mappers'],
  ['privacy'],
  ['db', 'queue.ts'],
  ['api'],
  ['state'],
  ['sync'],
  ['scheduler'],
  ['webhooks'],
  ['app.ts', 'progress-log.ts', 'analysts'],
  ['status'],
  ['serve', 'metrics.ts'],
  ['cli'],
];
const isFile = (unit) => unit.endsWith('.ts');
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/**
 * Forbids `from` to import `unit`, as written from anywhere in `from`: a loose file of src/ reaches it
 * by './', a file of a folder by one '../' per level it is nested.
 */
function forbid(from, unit) {
  const up = isFile(from) ? '\\./' : '(\\.\\./)+';
  const target = isFile(unit) ? `${escape(unit)}$` : `${escape(unit)}(/|$)`;
  return {
    regex: `^${up}${target}`,
    caseSensitive: true,
    allowTypeImports: false,
    message: `src/${from} must not import src/${unit}: it sits in a higher layer (LAYERS in eslint.config.js).`,
  };
}
const layerBlocks = LAYERS.flatMap((layer, i) =>
  layer.map((from) => ({
    files: [isFile(from) ? `src/${from}` : `src/${from}/**`],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: LAYERS.slice(i + 1)
            .flat()
            .map((unit) => forbid(from, unit)),
        },
      ],
    },
  })),
);
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
  // Layers go one way: each unit of src/ imports only its own layer and those below.
  ...layerBlocks,
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
