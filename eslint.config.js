import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
    ignores: ['src/queue.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'pg-boss', message: 'use src/queue.ts: it owns the pg-boss instance and reads queues through its API.' }],
          patterns: [
            { group: ['**/simulator/**', '**/simulator'], message: 'src/ must not import the simulator (it is not in the product image).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/queue.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/simulator/**', '**/simulator'], message: 'src/ must not import the simulator (it is not in the product image).' },
          ],
        },
      ],
    },
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
