/**
 * The prebuilt workflow bundles and what tells them apart. Kept apart from worker/tracing.ts so that
 * a worker without tracing never loads the OpenTelemetry SDK.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The workflow interceptor module: a workflow bundle that traces must be built with it. */
export const TRACING_WORKFLOW_MODULE =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * What `npm run build` writes beside dist/worker/: the workflows alone, and with
 * TRACING_WORKFLOW_MODULE. The built worker loads the one that matches its configuration.
 */
export const PREBUILT_BUNDLES = { plain: 'workflow-bundle.js', traced: 'workflow-bundle-traced.js' } as const;

/** Whether a workflow bundle's code carries the tracing workflow interceptors (webpack names modules by path). */
export function bundleTraces(code: string): boolean {
  return code.includes('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors.js');
}
