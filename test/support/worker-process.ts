/**
 * A Session worker as its own OS process, configured only through the environment like
 * `npm run worker`, but loading the test run's prebuilt workflow bundle. Tests kill it to prove
 * that a restart needs no recovery code.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../../worker/config.js';
import { createSessionWorker } from '../../worker/create-worker.js';
import { installTelemetry } from '../../worker/telemetry.js';
import { refusingModels } from './refusing-models.js';

// With HARNESS_METRICS_PORT the worker serves Prometheus metrics as `npm run worker` does.
if (process.env.HARNESS_METRICS_PORT) installTelemetry({ ...loadConfig().telemetry, logLevel: 'ERROR' });
else Runtime.install({ logger: new DefaultLogger('ERROR') });
const bundlePath = process.env.HARNESS_TEST_BUNDLE;
if (!bundlePath) throw new Error('HARNESS_TEST_BUNDLE is required');
// HARNESS_TEST_HANG_AFTER_CREATE=1: after starting a sub-session (and handing it its message),
// report it and hang before the activity can complete, so a test can kill this worker right there.
const hangAfterCreate = process.env.HARNESS_TEST_HANG_AFTER_CREATE === '1';
// HARNESS_TEST_HANG_AFTER_ANSWER=1: after a sub-session's reply reached its parent, report it and
// hang before the answerParent activity can complete, so a test can kill this worker right there.
const hangAfterAnswer = process.env.HARNESS_TEST_HANG_AFTER_ANSWER === '1';
// HARNESS_TEST_REFUSED_PORT=<port>: a request tagged `[<role>:refused]` goes to that closed port
// (test/support/refusing-models.ts).
const refusedPort = process.env.HARNESS_TEST_REFUSED_PORT;
const config = loadConfig();
const built = await createSessionWorker(config, {
  workflowBundle: { codePath: bundlePath },
  ...(refusedPort ? { models: refusingModels(config.models, Number(refusedPort)) } : {}),
  wrapSessions: (sessions) => ({
    ...sessions,
    async submitWithStart(args) {
      const answer = await sessions.submitWithStart(args);
      if (hangAfterCreate) {
        process.stdout.write(`sub-session started ${args.start.sessionId}\n`);
        await new Promise(() => {});
      }
      return answer;
    },
    async reply(args) {
      const answer = await sessions.reply(args);
      if (hangAfterAnswer) {
        process.stdout.write(`parent answered ${args.reply.sessionId}:${args.reply.seq}\n`);
        await new Promise(() => {});
      }
      return answer;
    },
  }),
});
process.stdout.write('worker ready\n');
await built.worker.run();
await built.close();
