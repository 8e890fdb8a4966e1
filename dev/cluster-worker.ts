/**
 * One worker process of `npm run cluster`: configured through the environment like `npm run
 * worker`, but loading the workflow bundle that cluster.ts built once (HARNESS_WORKFLOW_BUNDLE),
 * so N workers do not bundle N times on two cores.
 */
import { ConfigError, loadConfig } from '../worker/config.js';
import { createSessionWorker } from '../worker/create-worker.js';

const log = (line: string) => process.stdout.write(`${line}\n`);

try {
  const bundlePath = process.env.HARNESS_WORKFLOW_BUNDLE;
  if (!bundlePath) throw new ConfigError('HARNESS_WORKFLOW_BUNDLE is required');
  const config = loadConfig();
  const built = await createSessionWorker(config, { workflowBundle: { codePath: bundlePath }, log });
  log(`memories: ${await built.memories.count()} in ${built.memories.location}`);
  log(`polling "${config.temporal.taskQueue}" on ${config.temporal.address} as ${process.pid}`);
  // Worker.run drains in-flight tasks on SIGINT/SIGTERM before it returns.
  try {
    await built.worker.run();
  } finally {
    await built.close();
  }
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exitCode = 1;
}
