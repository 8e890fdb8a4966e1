/**
 * Replays every committed history in test/histories/ against today's workflow code. A failure here
 * means a control-flow change that must go behind `patched()` (or a new workflow type), not a
 * re-recording. The test bundles the workflows itself and starts no server, so CI can run it alone
 * (`npm run test:replay`); `npm run record-histories` writes the corpus.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, bundleWorkflowCode, type ReplayResult } from '@temporalio/worker';
import { sharedContractOptions } from '../worker/shared-contract.js';
import { beforeAll, describe, expect, it } from 'vitest';

// A replay logs each replay worker's life cycle; only problems matter here.
Runtime.install({ logger: new DefaultLogger('WARN') });

const dir = 'test/histories';
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

/**
 * Files are named <scenario>.<sessionId>.run<n>.json, and the Session checks its workflow id against
 * its sessionId. A sub-session's id has a dot of its own (`<parent>.sub-<hash>`).
 */
const workflowIdOf = (file: string) => `session:${file.slice(file.indexOf('.') + 1).replace(/\.run\d+\.json$/, '')}`;

const results = new Map<string, ReplayResult>();

beforeAll(async () => {
  const bundle = await bundleWorkflowCode({
    workflowsPath: resolve('workflows/index.ts'),
    ...(await sharedContractOptions()),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  // One replay worker for the whole corpus; it replays one history at a time, in the given order.
  const histories = files.map((file) => ({
    workflowId: workflowIdOf(file),
    history: historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8'))),
  }));
  let i = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, histories)) {
    results.set(files[i++]!, result);
  }
}, 120_000);

describe('replay of committed histories', () => {
  it('has histories to replay, the ones from before routing among them', () => {
    expect(files.length).toBeGreaterThan(0);
    expect(files.some((f) => f.startsWith('before-routing.'))).toBe(true);
    expect(files.some((f) => f.startsWith('with-routing.'))).toBe(true);
    expect(files.some((f) => f.startsWith('before-compact-to-low-water.'))).toBe(true);
    expect(files.some((f) => f.startsWith('before-approval-ids-agent-approval.'))).toBe(true);
  });

  it.each(files)('%s replays deterministically', (file) => {
    const result = results.get(file);
    expect(result, `${file} was not replayed`).toBeDefined();
    expect(result?.error).toBeUndefined();
  });
});
