/**
 * Writes the Session workflows bundled once at build time, so the production worker (`node
 * dist/worker/main.js`) starts without webpack and every worker of a release runs byte-identical
 * workflow code: dist/workflow-bundle.js, and dist/workflow-bundle-traced.js with the
 * OpenTelemetry workflow interceptors, which a worker with OTEL_EXPORTER_OTLP_ENDPOINT loads.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { PREBUILT_BUNDLES, TRACING_WORKFLOW_MODULE } from '../worker/workflow-bundles.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const builds = [
  { file: PREBUILT_BUNDLES.plain, workflowInterceptorModules: [] },
  { file: PREBUILT_BUNDLES.traced, workflowInterceptorModules: [TRACING_WORKFLOW_MODULE] },
];
for (const { file, workflowInterceptorModules } of builds) {
  const out = join(root, 'dist', file);
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    workflowInterceptorModules,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, code);
  process.stdout.write(`wrote ${out} (${Math.round(code.length / 1024)} KiB)\n`);
}
