/**
 * The prebuilt workflow bundles and what tells them apart. Kept apart from worker/tracing.ts so that
 * a worker without tracing never loads the OpenTelemetry SDK.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The workflow interceptor module: a workflow bundle that traces must be built with it. */
export const TRACING_WORKFLOW_MODULE =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** Beside this file: `.ts` in the sources (tsx, vitest), `.js` in the built `dist/`. */
function besideThis(name: string): string {
  try {
    return require.resolve(`./${name}.ts`);
  } catch {
    return require.resolve(`./${name}.js`);
  }
}

/** The workflow interceptor module an encrypting worker's bundle must carry (goal kept out of visibility). */
export const ENCRYPTED_WORKFLOW_MODULE = besideThis('encrypted-workflow-interceptors');

/**
 * What `npm run build` writes beside dist/worker/: the workflows alone, with TRACING_WORKFLOW_MODULE,
 * with ENCRYPTED_WORKFLOW_MODULE (and the encoding failure converter), and with both. The built
 * worker loads the one that matches its configuration.
 */
export const PREBUILT_BUNDLES = {
  plain: 'workflow-bundle.js',
  traced: 'workflow-bundle-traced.js',
  encrypted: 'workflow-bundle-encrypted.js',
  encryptedTraced: 'workflow-bundle-encrypted-traced.js',
} as const;

/** The prebuilt bundle for a worker's configuration. */
export function prebuiltBundleFor(options: { traced: boolean; encrypted: boolean }): string {
  if (options.encrypted) return options.traced ? PREBUILT_BUNDLES.encryptedTraced : PREBUILT_BUNDLES.encrypted;
  return options.traced ? PREBUILT_BUNDLES.traced : PREBUILT_BUNDLES.plain;
}

/** Whether a workflow bundle's code carries the tracing workflow interceptors (webpack names modules by path). */
export function bundleTraces(code: string): boolean {
  return code.includes('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors.js');
}

/**
 * Whether a workflow bundle's code carries ENCRYPTED_WORKFLOW_MODULE: webpack's quoted module id
 * (`"./worker/encrypted-workflow-interceptors.ts"`), not merely the name, which also appears as text
 * in every bundle (the patch table says where `goal-attribute-off-when-encrypted` is asked).
 */
export function bundleEncrypts(code: string): boolean {
  return /["']\.\/(?:[\w.-]+\/)*encrypted-workflow-interceptors\.[cm]?[jt]s["']/.test(code);
}
