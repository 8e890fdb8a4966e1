// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * The layers, top to bottom. A folder may import the folders listed after it in its own entry and
 * nothing above. `contract/` is the ground floor: wire and state schemas, ids, failure kinds, the
 * workflow-activity contract. `client/` is the library backend services import: it sees only
 * `contract/`. The worker and the dev stack use it too, for the connection settings and the payload
 * codec they must share with every other client of the same cluster.
 */
const LAYERS = {
  cli: ['dev', 'gateway', 'worker', 'activities', 'models', 'capabilities', 'client', 'workflows', 'contract'],
  dev: ['gateway', 'worker', 'activities', 'models', 'capabilities', 'client', 'workflows', 'contract'],
  gateway: ['client', 'contract'],
  worker: ['activities', 'models', 'capabilities', 'client', 'workflows', 'contract'],
  activities: ['models', 'capabilities', 'contract'],
  models: ['contract'],
  capabilities: ['contract'],
  client: ['contract'],
  workflows: ['contract'],
  contract: [],
};

/**
 * The rooms of workflows/, top to bottom (docs/design.md, "Inside workflows/"). A room may import the
 * rooms below it, never one above it nor the files at the top of workflows/ (session.ts,
 * process-input.ts, patches.ts, index.ts), which stand above every room.
 */
const WORKFLOW_ROOMS = [
  'control',
  'view',
  'agent',
  'children',
  'environment',
  'understanding',
  'run',
  'stages',
  'ledger',
];
const WORKFLOW_TOP = ['index.ts', 'session.ts', 'process-input.ts', 'patches.ts'];

function workflowRoomZones() {
  return WORKFLOW_ROOMS.map((room, i) => ({
    target: `./workflows/${room}`,
    from: [...WORKFLOW_ROOMS.slice(0, i + 1).filter((r) => r !== room), ...WORKFLOW_TOP].map((r) => `./workflows/${r}`),
    message: `workflows/${room}/ may import only the rooms below it: ${WORKFLOW_ROOMS.slice(i + 1).join(', ') || 'none'}.`,
  })).filter((zone) => zone.from.length > 0);
}

function layerZones() {
  const all = Object.keys(LAYERS);
  return all
    .map((layer) => ({
      target: `./${layer}`,
      from: all.filter((other) => other !== layer && !LAYERS[layer].includes(other)).map((other) => `./${other}`),
      message: `${layer}/ may import only ${LAYERS[layer].join(', ') || 'itself'} (layers point down).`,
    }))
    .filter((zone) => zone.from.length > 0);
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/.artifacts/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['eslint.config.js', 'bin/*.js', 'worker/*.cjs', 'dev/*.cjs', 'models/local/*.mjs'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { 'import-x': importX },
    // Resolves `./x.js` specifiers to their `.ts` sources, so import-x rules see every edge.
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      // One layer per top-level folder; imports point down only (see README, "Where things are").
      'import-x/no-restricted-paths': ['error', { zones: [...layerZones(), ...workflowRoomZones()] }],
    },
  },
  {
    // Workflow code, and the contract it bundles, runs in Temporal's deterministic sandbox: no I/O,
    // no model clients.
    files: ['workflows/**/*.ts', 'contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: 'Workflow code must not use Node built-ins (replay safety).',
            })),
            {
              name: 'openai',
              message: 'Model calls belong in models/ (called from activities), never in workflow code.',
            },
          ],
          patterns: [
            {
              group: ['openai/*'],
              message: 'Model calls belong in models/ (called from activities), never in workflow code.',
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
  {
    // Modules Temporal loads by path with require() (worker/encoded-failure-converter.cjs), and the
    // dev server's guardian, which node runs as a plain script (dev/server-guard.cjs).
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', exports: 'writable' } },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
);
