/**
 * One real Temporal dev server per test run (the pinned CLI, started through
 * TestWorkflowEnvironment.createLocal with an existing-path executable), and one workflow bundle
 * that every test worker loads.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode } from '@temporalio/worker';
import { sharedContractOptions } from '../worker/shared-contract.js';
import type { TestProject } from 'vitest/node';
import { ensureTemporalCli } from '../dev/temporal-cli.js';
import { dynamicConfigFlags } from '../dev/dev-server.js';
import { SessionGoalKey, SessionParentKey, SessionStageKey, SessionStatusKey } from '../contract/search-attributes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    workflowBundlePath: string;
    temporalCliPath: string;
  }
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
let env: TestWorkflowEnvironment | undefined;

export async function setup(project: TestProject): Promise<void> {
  const cliPath = ensureTemporalCli({ log: (line) => console.log(`[global-setup] ${line}`) });
  env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: cliPath },
      searchAttributes: [SessionStageKey, SessionStatusKey, SessionParentKey, SessionGoalKey],
      ip: '127.0.0.1',
      // The dynamic config `npm start` gives its server (eager activity execution), so tests run on it.
      extraArgs: ['--log-level', 'error', ...dynamicConfigFlags()],
    },
  });
  const bundle = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    ...(await sharedContractOptions()),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  const bundlePath = join(root, 'test', '.artifacts', 'workflow-bundle.js');
  mkdirSync(dirname(bundlePath), { recursive: true });
  writeFileSync(bundlePath, bundle.code);
  project.provide('temporalAddress', env.address);
  project.provide('temporalNamespace', env.namespace ?? 'default');
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalCliPath', cliPath);
}

export async function teardown(): Promise<void> {
  await env?.teardown();
}
