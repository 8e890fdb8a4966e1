/**
 * The contract, evaluated once per workflow thread instead of once per workflow.
 *
 * With `reuseV8Context` the SDK evaluates every module of the workflow bundle again for each
 * workflow it caches. For the contract's zod schemas and zod itself that was about 2.2 MiB of heap
 * per cached Session (issue 37): the same schemas, built again for every Session. Here the contract
 * modules that workflow code imports are bundled (esbuild, zod and @noble/hashes inside) into one
 * CommonJS module whose only exports are each contract module's exports, zod schemas replaced by
 * frozen parse facades (worker/shared-contract-facade.ts). The workflow bundle loads it with
 * `preloadModules`, so it runs once per V8 context, before any workflow; every import of a shared
 * contract module from bundled code is redirected to a small shim that re-exports its part.
 *
 * Validation itself is unchanged: the same zod schemas parse every signal, update, start argument,
 * carried state and activity result, with the same messages, defaults and transforms. Without these
 * options (another bundler, `reuseV8Context: false`) the bundle evaluates the contract modules per
 * workflow as before, with the same results.
 *
 * Not shared: contract modules that import an SDK package at run time (api.ts defines the signals with
 * @temporalio/workflow, search-attributes.ts its keys with @temporalio/common). A preloaded module is
 * frozen and shared, so the SDK must stay out of it.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { BundleOptions } from '@temporalio/worker';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');
const CONTRACT = join(ROOT, 'contract');
/** `.ts` in the sources (tsx, vitest), `.js` in the built `dist/`. */
const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
/** Where the shared module and its shims are written (one folder per content hash). */
const CACHE = join(ROOT, 'node_modules', '.cache', 'session-harness-shared-contract');

/** What `bundleWorkflowCode` and `WorkerOptions.bundlerOptions` take to share the contract. */
export type SharedContractOptions = Required<Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'>>;

type WebpackConfiguration = Parameters<SharedContractOptions['webpackConfigHook']>[0];

interface ResolveData {
  context: string;
  request: string;
}
interface Compiler {
  hooks: {
    normalModuleFactory: {
      tap(
        name: string,
        fn: (factory: {
          hooks: { beforeResolve: { tap(name: string, fn: (data: ResolveData) => void): void } };
        }) => void,
      ): void;
    };
  };
}

/** A contract module imports an SDK package at run time (not only its types). */
function importsSdk(source: string): boolean {
  return /^import\s+(?!type\b)[^;]*?from\s+'@temporalio\//m.test(source);
}

/** The contract modules that go into the shared module: every one that does not import the SDK. */
export function sharedContractModules(): string[] {
  return readdirSync(CONTRACT)
    .filter((file) => file.endsWith(EXT) && !file.endsWith('.d.ts'))
    .filter((file) => !importsSdk(readFileSync(join(CONTRACT, file), 'utf8')))
    .map((file) => basename(file, EXT))
    .sort();
}

/** Bundles the shared contract module; its code and the modules it carries. */
export async function buildSharedContract(): Promise<{ code: string; modules: string[] }> {
  const modules = sharedContractModules();
  const facade = join(ROOT, 'worker', `shared-contract-facade${EXT}`);
  const entry = [
    `import { shareable } from ${JSON.stringify(facade)};`,
    ...modules.map((name, i) => `import * as m${i} from ${JSON.stringify(join(CONTRACT, `${name}${EXT}`))};`),
    `const facades = new Map();`,
    ...modules.map((_, i) => `const s${i} = shareable(m${i}, facades);`),
    `export { ${modules.map((name, i) => `s${i} as ${JSON.stringify(name)}`).join(', ')} };`,
  ].join('\n');
  const result = await build({
    stdin: { contents: entry, resolveDir: ROOT, sourcefile: 'shared-contract-entry.js', loader: 'js' },
    bundle: true,
    format: 'cjs',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['import', 'default'],
    target: 'es2022',
    write: false,
    metafile: true,
    legalComments: 'none',
    // The SDK must never be copied into a shared, frozen module (see above).
    external: ['@temporalio/*'],
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]?.text ?? '';
  if (/require\(["']@temporalio\//.test(code)) {
    throw new Error('the shared contract module imports a Temporal SDK package; keep that contract module out of it');
  }
  return { code, modules };
}

let prepared: Promise<SharedContractOptions> | undefined;

/**
 * Bundler options that load the shared contract module once per V8 context and point every import
 * of a shared contract module at it. Built once per process; written under node_modules/.cache.
 */
export function sharedContractOptions(): Promise<SharedContractOptions> {
  prepared ??= (async () => {
    const { code, modules } = await buildSharedContract();
    const dir = join(CACHE, createHash('sha256').update(code).digest('hex').slice(0, 16));
    mkdirSync(dir, { recursive: true });
    const shared = join(dir, 'shared-contract.cjs');
    writeFileSync(shared, code);
    const shims = new Map<string, string>();
    for (const name of modules) {
      const shim = join(dir, `${name}.cjs`);
      writeFileSync(shim, `module.exports = require(${JSON.stringify(shared)})[${JSON.stringify(name)}];\n`);
      shims.set(join(CONTRACT, name), shim);
    }
    const redirect = (data: ResolveData) => {
      if (!data.request.startsWith('.')) return;
      const target = resolve(data.context, data.request).replace(/\.(js|ts)$/, '');
      const shim = dirname(target) === CONTRACT ? shims.get(target) : undefined;
      if (shim) data.request = shim;
    };
    return {
      preloadModules: [shared, ...shims.values()],
      webpackConfigHook: (config: WebpackConfiguration) => ({
        ...config,
        plugins: [
          ...(config.plugins ?? []),
          {
            apply(compiler: Compiler) {
              compiler.hooks.normalModuleFactory.tap('SharedContract', (factory) =>
                factory.hooks.beforeResolve.tap('SharedContract', redirect),
              );
            },
          },
        ],
      }),
    };
  })();
  return prepared;
}
