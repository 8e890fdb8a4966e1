/**
 * The fault suite's own dev server (SQLite on a file, HTTP API on a free port) and workflow bundle,
 * provided under the same names as the main suite's so test/support helpers work unchanged. The
 * teardown prints the table every scenario contributed a row to, and writes it as JSON.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { sharedContractOptions } from '../../worker/shared-contract.js';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../dev/dev-server.js';
import { ensureTemporalCli } from '../../dev/temporal-cli.js';
import { freePorts } from '../support/ports.js';
import { ARTIFACTS, ROWS_DIR, readRows, renderTable } from './rows.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared fault-suite server's HTTP API port (start-dev --http-port). */
    faultsHttpPort: number;
  }
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
let server: DevServer | undefined;
let dataDir: string | undefined;
const started = Date.now();

export async function setup(project: TestProject): Promise<void> {
  const cliPath = ensureTemporalCli({ log: (line) => console.log(`[faults] ${line}`) });
  rmSync(ROWS_DIR, { recursive: true, force: true });
  mkdirSync(ROWS_DIR, { recursive: true });
  const bundle = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    ...(await sharedContractOptions()),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  const bundlePath = join(ARTIFACTS, 'faults-workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  const [port, uiPort, httpPort] = (await freePorts(3)) as [number, number, number];
  dataDir = mkdtempSync(join(tmpdir(), 'harness-faults-'));
  server = await startDevServer({
    cliPath,
    dbFile: join(dataDir, 'temporal.db'),
    port,
    uiPort,
    httpPort,
    namespace: 'default',
    log: () => {},
  });
  project.provide('temporalAddress', server.address);
  project.provide('temporalNamespace', 'default');
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalCliPath', cliPath);
  project.provide('faultsHttpPort', httpPort);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  const rows = readRows();
  const totalMs = Date.now() - started;
  writeFileSync(join(ARTIFACTS, 'faults.json'), `${JSON.stringify({ totalMs, rows }, null, 2)}\n`);
  // stdout, not a logger: the table is the suite's result and CI logs keep it.
  process.stdout.write(`\n${renderTable(rows)}\nfault suite total: ${(totalMs / 1000).toFixed(1)} s\n`);
}
