/**
 * Writes the Session workflows bundled once at build time, so the production worker (`node
 * dist/worker/main.js`) starts without webpack and every worker of a release runs byte-identical
 * workflow code: dist/workflow-bundle.js, and dist/workflow-bundle-traced.js with the
 * OpenTelemetry workflow interceptors, which a worker with OTEL_EXPORTER_OTLP_ENDPOINT loads, and
 * the `-encrypted` pair that a worker with HARNESS_ENCRYPTION_KEYS loads (goal kept out of
 * visibility, failures encoded).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { ENCRYPTED_WORKFLOW_MODULE, PREBUILT_BUNDLES, TRACING_WORKFLOW_MODULE } from '../worker/workflow-bundles.js';
import { sharedContractOptions } from '../worker/shared-contract.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const failureConverterPath = join(root, 'worker', 'encoded-failure-converter.cjs');
const builds = [
  { file: PREBUILT_BUNDLES.plain, workflowInterceptorModules: [] },
  { file: PREBUILT_BUNDLES.traced, workflowInterceptorModules: [TRACING_WORKFLOW_MODULE] },
  { file: PREBUILT_BUNDLES.encrypted, workflowInterceptorModules: [ENCRYPTED_WORKFLOW_MODULE], failureConverterPath },
  {
    file: PREBUILT_BUNDLES.encryptedTraced,
    workflowInterceptorModules: [ENCRYPTED_WORKFLOW_MODULE, TRACING_WORKFLOW_MODULE],
    failureConverterPath,
  },
];
// The contract is evaluated once per workflow thread, not per workflow (worker/shared-contract.ts).
const shared = await sharedContractOptions();
for (const { file, ...options } of builds) {
  const out = join(root, 'dist', file);
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    ...options,
    ...shared,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, code);
  process.stdout.write(`wrote ${out} (${Math.round(code.length / 1024)} KiB)\n`);
}
