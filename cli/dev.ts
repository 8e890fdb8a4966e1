/**
 * `harness dev | worker`: run the embedded stack (what `npm start` runs) or a worker against a
 * cluster. Both load the worker only when chosen, so the other commands start fast.
 */
import type { Command } from 'commander';
import { globalOptions, type CommandContext } from './context.js';
import { UsageError } from './run.js';

export function addDevCommands(program: Command, { line }: CommandContext): void {
  program
    .command('dev')
    .description('run `temporal server start-dev` (SQLite, Web UI) and one worker; what `npm start` runs')
    .option('--no-check', 'skip the model check at start (as HARNESS_MODEL_CHECK=off)')
    .action(async (opts: { check: boolean }, cmd: Command) => {
      const g = globalOptions(cmd);
      const { runDev } = await import('../dev/dev.js');
      await runDev({
        env: {
          ...process.env,
          TEMPORAL_NAMESPACE: g.namespace,
          HARNESS_TASK_QUEUE: g.taskQueue,
          ...(opts.check ? {} : { HARNESS_MODEL_CHECK: 'off' }),
        },
      });
    });

  program
    .command('worker')
    .description('run a Session worker against --address on --task-queue')
    .option('--no-check', 'skip the model check at start (as HARNESS_MODEL_CHECK=off)')
    .action(async (opts: { check: boolean }, cmd: Command) => {
      const g = globalOptions(cmd);
      if (g.tls || g.tlsCert || g.tlsCa || g.apiKey) {
        throw new UsageError('harness worker does not support TLS or API keys yet; run it next to the cluster');
      }
      const [{ loadConfig }, { runWorker }] = await Promise.all([
        import('../worker/config.js'),
        import('../worker/run-worker.js'),
      ]);
      const config = loadConfig({
        ...process.env,
        TEMPORAL_ADDRESS: g.address,
        TEMPORAL_NAMESPACE: g.namespace,
        HARNESS_TASK_QUEUE: g.taskQueue,
        ...(opts.check ? {} : { HARNESS_MODEL_CHECK: 'off' }),
      });
      await runWorker(config, (text) => line(`[worker] ${text}`));
    });
}
