/**
 * Writes dist/workflow-bundle.js, the Session workflows bundled once at build time, so the
 * production worker (`node dist/worker/main.js`) starts without webpack and every worker of a
 * release runs byte-identical workflow code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'workflow-bundle.js');
const { code } = await bundleWorkflowCode({
  workflowsPath: join(root, 'workflows', 'index.ts'),
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
});
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, code);
process.stdout.write(`wrote ${out} (${Math.round(code.length / 1024)} KiB)\n`);
