/**
 * Starts test/support/worker-process.ts as a separate OS process against the run's dev server,
 * configured through the environment like `npm run worker`, so tests can SIGKILL a real worker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { MODEL } from './harness.js';
import type { ScriptedModelServer } from './model-server.js';

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp): Promise<string>;
  /**
   * Rejects, naming the exit code or signal, if the process exits without `kill()` (a crash); never
   * resolves. Race a wait against it so a dead worker fails the test at once, not at its timeout.
   */
  died: Promise<never>;
  kill(): Promise<void>;
}

/**
 * The environment that puts a worker process on the run's dev server and task queue, with every role
 * served by the scripted model server.
 */
export function workerEnv(taskQueue: string, models: ScriptedModelServer): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    HARNESS_TASK_QUEUE: taskQueue,
    OPENAI_BASE_URL: models.baseURL,
    OPENAI_API_KEY: 'test',
    HARNESS_RELEVANCE_MODEL: MODEL.relevance,
    HARNESS_EXTRACTION_MODEL: MODEL.extraction,
    HARNESS_ORCHESTRATION_MODEL: MODEL.orchestration,
    HARNESS_COMPACTION_MODEL: MODEL.compaction,
    HARNESS_AGENT_MODEL: MODEL.agent,
    // Every answer of the scripted server is scripted per test; the start-up model check would take
    // some of them (it has tests of its own: test/model-check.test.ts).
    HARNESS_MODEL_CHECK: 'off',
  };
}

export async function spawnWorker(options: {
  taskQueue: string;
  models: ScriptedModelServer;
  env?: Record<string, string>;
}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/worker-process.ts'], {
    env: {
      ...process.env,
      ...workerEnv(options.taskQueue, options.models),
      HARNESS_TEST_BUNDLE: inject('workflowBundlePath'),
      HARNESS_MEMORY_DB: join(mkdtempSync(join(tmpdir(), 'harness-memory-')), 'memory.db'),
      HARNESS_MODEL_PROVIDER: 'openai',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.pattern.test(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  let killing = false;
  let rejectDied: (err: Error) => void = () => {};
  const died = new Promise<never>((_, reject) => {
    rejectDied = reject;
  });
  // Nobody may be racing it when it fires (a test between waits); the racers still see the rejection.
  died.catch(() => {});
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      if (!killing) rejectDied(new Error(`the worker process exited on its own (${signal ?? `code ${code}`})`));
      resolve();
    }),
  );
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const seen = lines.find((l) => pattern.test(l));
      if (seen) return resolve(seen);
      waiters.push({ pattern, resolve });
      void exited.then(() => reject(new Error(`worker exited before printing ${String(pattern)}`)));
    });
  await line(/worker ready/);
  return {
    child,
    line,
    died,
    async kill() {
      killing = true;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
