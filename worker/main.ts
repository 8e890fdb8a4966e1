/**
 * `npm run worker`: a Session worker against TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE on
 * HARNESS_TASK_QUEUE. Run as many as you like on the same queue.
 */
import { ConfigError, loadConfig } from './config.js';
import { runWorker } from './run-worker.js';

const log = (line: string) => process.stdout.write(`[worker] ${line}\n`);

try {
  await runWorker(loadConfig(), log);
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exitCode = 1;
}
