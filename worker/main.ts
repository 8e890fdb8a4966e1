/**
 * `npm run worker` (TypeScript through tsx) and `node dist/worker/main.js` (the built worker): a
 * Session worker configured by the environment (TEMPORAL_* connection, HARNESS_* settings; see
 * docs/deploying.md). Run as many as you like on the same task queue.
 *
 * The built worker loads dist/workflow-bundle.js (with OTEL_EXPORTER_OTLP_ENDPOINT set:
 * dist/workflow-bundle-traced.js; with HARNESS_ENCRYPTION_KEYS set: the `-encrypted` variants),
 * written by `npm run build`, instead of bundling the workflows at start; HARNESS_WORKFLOW_BUNDLE
 * points at another bundle.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './config.js';
import { runWorker } from './run-worker.js';
import { prebuiltBundleFor } from './workflow-bundles.js';
import { ConnectionConfigError } from '../client/connection.js';

const log = (line: string) => process.stdout.write(`[worker] ${line}\n`);

/** A bundle beside dist/worker/, present only in a build. */
const prebuilt = (file: string) => fileURLToPath(new URL(`../${file}`, import.meta.url));

try {
  // `--no-check` skips the start-up model check, as HARNESS_MODEL_CHECK=off does.
  const config = loadConfig(
    process.argv.includes('--no-check') ? { ...process.env, HARNESS_MODEL_CHECK: 'off' } : process.env,
  );
  const bundle = prebuilt(
    prebuiltBundleFor({ traced: Boolean(config.telemetry.otlpEndpoint), encrypted: config.encryptionKeys.length > 0 }),
  );
  if (!config.worker.workflowBundle && existsSync(bundle)) config.worker.workflowBundle = bundle;
  await runWorker(config, log);
} catch (err) {
  const known = err instanceof ConfigError || err instanceof ConnectionConfigError;
  process.stderr.write(`${known ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exitCode = 1;
}
