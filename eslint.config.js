// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/.artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js', 'bin/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no I/O, no model clients.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: 'Workflow code must not use Node built-ins (replay safety).',
            })),
            { name: 'openai', message: 'Model calls belong in activities/, never in workflow code.' },
          ],
          patterns: [
            { group: ['openai/*'], message: 'Model calls belong in activities/, never in workflow code.' },
            {
              group: ['**/activities/*', '!**/activities/types', '!**/activities/types.js'],
              message: 'Workflows import activity types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // vitest's asymmetric matchers (expect.stringContaining, ...) are typed `any`.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    files: ['eslint.config.js', 'bin/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
