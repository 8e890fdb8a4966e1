/**
 * The local provider's roles as one synchronous, pure function of plain data, so the same code runs
 * on the calling thread or in a scoring thread (scoring-pool.ts) with its task and answer sent as
 * structured clones.
 */
import type {
  CompactRequest,
  ExtractRequest,
  ExtractResult,
  OrchestrateRequest,
} from '../../contract/activity-contract.js';
import type { RelevanceRequest } from '../../contract/relevance.js';
import type { PartialSelection } from '../../contract/activity-contract.js';
import type { RelevanceScores } from '../../contract/relevance.js';
import { extractKeywords } from './keywords.js';
import { orchestrateLocally, type OrchestrationOptions } from './orchestrate.js';
import { scoreRelevance } from './relevance.js';
import { extractiveSummary, type SummaryOptions } from './summary.js';

/** One call of a local role. */
export type LocalRoleTask =
  | { role: 'relevance'; request: RelevanceRequest }
  | { role: 'extraction'; request: ExtractRequest }
  | { role: 'orchestration'; request: OrchestrateRequest }
  | { role: 'compaction'; request: CompactRequest };

/** What each local role answers; compaction's `undefined` means the phase had nothing to summarise. */
export interface LocalRoleResults {
  relevance: RelevanceScores;
  extraction: ExtractResult;
  orchestration: PartialSelection;
  compaction: { summary: string | undefined };
}

/** The settings of the local roles, resolved. */
export interface LocalRoleSettings {
  maxTerms: number;
  orchestration: OrchestrationOptions;
  summary: SummaryOptions;
}

/** Runs one local role. Resource references are not read: the scorer judges the text against the goals. */
export function runLocalRole<T extends LocalRoleTask>(
  task: T,
  settings: LocalRoleSettings,
): LocalRoleResults[T['role']] {
  return runTask(task, settings) as LocalRoleResults[T['role']];
}

function runTask(task: LocalRoleTask, settings: LocalRoleSettings): LocalRoleResults[LocalRoleTask['role']] {
  switch (task.role) {
    case 'relevance': {
      const { phaseRelevance, sessionRelevance } = scoreRelevance({
        message: task.request.message.text,
        phaseGoal: task.request.phaseGoal,
        sessionGoal: task.request.sessionGoal,
      });
      return { phaseRelevance, sessionRelevance };
    }
    case 'extraction':
      return { terms: extractKeywords(task.request.task, settings.maxTerms) };
    case 'orchestration':
      return orchestrateLocally(task.request, settings.orchestration);
    case 'compaction':
      return { summary: extractiveSummary(task.request, settings.summary) };
  }
}
