/**
 * The entry point of a scoring thread (scoring-pool.ts): answers each task posted by the pool with
 * the local role's result or the message of what it threw. One task at a time, in order.
 */
import { parentPort } from 'node:worker_threads';
import { runLocalRole, type LocalRoleSettings, type LocalRoleTask } from './local-roles.js';

/** A task as the pool posts it. */
export interface ThreadRequest {
  id: number;
  task: LocalRoleTask;
  settings: LocalRoleSettings;
}

/** A scoring thread's answer to one task. */
export type ThreadReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

const port = parentPort;
if (!port) throw new Error('scoring-thread.ts runs only as a worker thread (see scoring-pool.ts)');

port.on('message', ({ id, task, settings }: ThreadRequest) => {
  let reply: ThreadReply;
  try {
    reply = { id, ok: true, value: runLocalRole(task, settings) };
  } catch (err) {
    reply = { id, ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});

// Load wink-nlp's model, jieba's dictionary (English and Chinese paths) and the word vectors now (about 2 s) rather than in the
// first message's time budget; tasks posted meanwhile wait in the port.
for (const text of ['warm up', '预热一下']) {
  runLocalRole(
    { role: 'relevance', request: { message: { text, resources: [] }, phaseGoal: 'warm up', sessionGoal: '' } },
    { maxTerms: 1, orchestration: { floor: 1, perKind: 0 }, summary: { maxSentences: 0, maxWords: 0 } },
  );
}
