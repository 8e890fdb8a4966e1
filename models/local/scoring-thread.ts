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

// Load wink-nlp's model, jieba's dictionary (English and Chinese paths), the word vectors and each
// role's own code paths now (about 2 s), while piscina loads this file, rather than in the first
// message's time budget: a first extraction cost 516 ms against 133-158 ms for the next ones when
// only relevance was warmed here.
const WARM_SETTINGS: LocalRoleSettings = {
  maxTerms: 4,
  orchestration: { floor: 1, perKind: 0 },
  summary: { maxSentences: 1, maxWords: 8 },
};
for (const text of ['Convert the quarterly report to a PDF', '把季度报告转换成 PDF 文件']) {
  const task = { sessionGoal: text, phaseGoal: text, message: text, resources: [] };
  runLocalRole(
    { role: 'relevance', request: { message: { text, resources: [] }, phaseGoal: text, sessionGoal: '' } },
    WARM_SETTINGS,
  );
  runLocalRole({ role: 'extraction', request: { task } }, WARM_SETTINGS);
}
