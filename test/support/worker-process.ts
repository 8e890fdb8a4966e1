/**
 * A Session worker as its own OS process, configured only through the environment like
 * `npm run worker`, but loading the test run's prebuilt workflow bundle. Tests kill it to prove
 * that a restart needs no recovery code.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../../worker/config.js';
import { createSessionWorker } from '../../worker/create-worker.js';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const bundlePath = process.env.HARNESS_TEST_BUNDLE;
if (!bundlePath) throw new Error('HARNESS_TEST_BUNDLE is required');
const built = await createSessionWorker(loadConfig(), { workflowBundle: { codePath: bundlePath } });
process.stdout.write('worker ready\n');
await built.worker.run();
await built.connection.close();
