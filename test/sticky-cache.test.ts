/**
 * The sticky cache cannot kill the worker. `npm run worker` (worker/main.ts as a real process, on the
 * local provider) runs with a small heap (`--max-old-space-size` in NODE_OPTIONS), sizes its cache from
 * the workflow thread's heap limit and logs it; three times as many Sessions as that cache holds each
 * get a first input, then each, oldest first, gets a later input and answers it. By then the oldest
 * Sessions have long been evicted, so their later input replays them. The worker must still be
 * running at the end and must never have logged running out of memory. Nothing is timed.
 *
 * The SDK's own default would not fail at this heap (its formula keeps 200 MiB back); what fails
 * without this change is a worker with a large heap and many Sessions, which the capacity benchmark
 * measures (`npm run bench -- --scenarios capacity`) rather than a test on two shared cores.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/session-client.js';
import { cacheSizeFor, SESSION_HEAP_MIB, THREAD_BASE_MIB } from '../worker/capacity.js';
import { uniqueId } from './support/harness.js';
import { startLoggedProcess, type LoggedProcess } from './support/logged-process.js';

/** Old-space MiB of the worker process (each of its V8 heaps, the workflow thread's included). */
const HEAP_MIB = 192;

let worker: LoggedProcess;
let client: SessionClient;
let cacheSize: number;
const taskQueue = uniqueId('cache');

beforeAll(async () => {
  worker = startLoggedProcess(['--import', 'tsx', 'worker/main.ts'], {
    PATH: process.env.PATH,
    HOME: mkdtempSync(join(tmpdir(), 'cache-home-')),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    HARNESS_TASK_QUEUE: taskQueue,
    HARNESS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'cache-data-')),
    HARNESS_MODEL_PROVIDER: 'local',
    NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}`,
  });
  const line = await worker.waitForLine(/sticky cache: \d+ Sessions/, 120_000);
  cacheSize = Number(/sticky cache: (\d+) Sessions/.exec(line)?.[1]);
  await worker.waitForLine(/worker polling task queue/, 120_000);
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue, env: {} });
}, 180_000);

afterAll(async () => {
  await client?.close();
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
});

describe('the sticky cache', () => {
  it('is sized from the heap limit so that its Sessions fit', () => {
    // The heap limit a Node process (and each of its threads) gets with this flag.
    const limit = Number(
      execFileSync(process.execPath, ['-p', "require('node:v8').getHeapStatistics().heap_size_limit"], {
        env: { PATH: process.env.PATH, NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` },
      }).toString(),
    );
    expect(cacheSize).toBe(cacheSizeFor(limit));
    expect(cacheSize).toBeGreaterThanOrEqual(10);
    expect(THREAD_BASE_MIB + cacheSize * SESSION_HEAP_MIB).toBeLessThanOrEqual(limit / 1024 / 1024);
  });

  it(
    'evicts instead of dying: three times the cache in Sessions all answer a later input',
    { timeout: 900_000 },
    async () => {
      const ids = Array.from({ length: cacheSize * 3 }, (_, i) => uniqueId(`c${i}`));
      const answer = async (id: string, text: string, seq: number) => {
        const result = await client.submit(id, { text }, { wait: { timeoutMs: 300_000 } });
        expect(result.seq).toBe(seq);
        expect(result.decision?.seq).toBe(seq);
        expect(result.decision?.agent?.outcome).toBeTruthy();
      };
      // Four at a time: enough to keep the worker busy, few enough for two shared cores.
      const inTurn = async (work: (id: string) => Promise<void>) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            while (next < ids.length) await work(ids[next++] as string);
          }),
        );
      };
      await inTurn((id) => answer(id, 'Research ComfyUI and deliver a Markdown guide', 1));
      // Oldest first: the first Sessions were evicted long ago and replay now.
      await inTurn((id) => answer(id, 'Continue', 2));
      expect(worker.child.exitCode).toBeNull();
      expect(worker.lines.filter((l) => /out of memory|ERR_WORKER_OUT_OF_MEMORY/i.test(l))).toEqual([]);
    },
  );
});
