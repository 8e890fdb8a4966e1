/**
 * A scoring thread's task function (scoring-pool.ts, piscina): a local role's result, or what it threw.
 */
import { runLocalRole, type LocalRoleSettings, type LocalRoleTask } from './local-roles.js';

/** A task as the pool sends it. */
export interface ScoringRequest {
  task: LocalRoleTask;
  settings: LocalRoleSettings;
}

/** Runs one task on this thread. */
export default function score({ task, settings }: ScoringRequest): unknown {
  return runLocalRole(task, settings);
}

// Load wink-nlp's model, jieba's dictionary (English and Chinese paths) and the word vectors now (about
// 2 s), while piscina loads this file, rather than in the first message's time budget.
for (const text of ['warm up', '预热一下']) {
  runLocalRole(
    { role: 'relevance', request: { message: { text, resources: [] }, phaseGoal: 'warm up', sessionGoal: '' } },
    { maxTerms: 1, orchestration: { floor: 1, perKind: 0 }, summary: { maxSentences: 0, maxWords: 0 } },
  );
}
