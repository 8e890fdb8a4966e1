/**
 * `npm run test:cluster`: one self-hosted Temporal cluster on PostgreSQL for the run (the same stack
 * as `npm run cluster`), a database for the shared memory store, and one workflow bundle that every
 * worker process loads. It provides the same names as test/global-setup.ts, so the test/support
 * helpers work unchanged against the cluster.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { sharedContractOptions } from '../../worker/shared-contract.js';
import type { TestProject } from 'vitest/node';
import { findPostgresBin } from '../../dev/postgres.js';
import { startTemporalCluster, type TemporalCluster } from '../../dev/temporal-cluster.js';
import { ensureClusterBinaries } from '../../dev/temporal-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL database for the shared memory store (HARNESS_MEMORY_URL). */
    clusterMemoryUrl: string;
    clusterUiUrl: string;
  }
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
let cluster: TemporalCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  const log = (line: string) => console.log(`[cluster-setup] ${line}`);
  const pgBin = findPostgresBin();
  if (!pgBin) {
    throw new Error('the cluster tests need PostgreSQL: apt-get install postgresql (or set HARNESS_PG_BIN)');
  }
  const binaries = ensureClusterBinaries({ log });
  cluster = await startTemporalCluster({ binaries, pgBin, log });
  log(`Temporal on ${cluster.address}, Web UI ${cluster.uiUrl}, logs in ${cluster.dir}`);
  const memoryUrl = await cluster.postgres.createDatabase('harness_memory');
  const bundle = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    ...(await sharedContractOptions()),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  const bundlePath = join(root, 'test', '.artifacts', 'cluster-workflow-bundle.js');
  mkdirSync(dirname(bundlePath), { recursive: true });
  writeFileSync(bundlePath, bundle.code);
  project.provide('temporalAddress', cluster.address);
  project.provide('temporalNamespace', cluster.namespace);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalCliPath', '');
  project.provide('clusterMemoryUrl', memoryUrl);
  project.provide('clusterUiUrl', cluster.uiUrl ?? '');
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
