/**
 * RoleModels without a model: the `local` provider, used when no OpenAI-compatible endpoint is
 * configured. Deterministic and offline, built on wink-nlp, jieba and stopword (see
 * `models/local/`): relevance from lexical similarity, a bilingual concept lexicon and English word
 * vectors plus documented discourse rules (docs/relevance.md),
 * extraction by keyword extraction, orchestration by a score floor over the recall candidates,
 * compaction by an extractive summary. It has no agent model, so it never writes a reply.
 */
import { FAILURE } from '../contract/failures.js';
import { ApplicationFailure } from '@temporalio/common';
import { extractKeywords } from './local/keywords.js';
import { DEFAULT_ORCHESTRATION, orchestrateLocally, type OrchestrationOptions } from './local/orchestrate.js';
import { scoreRelevance } from './local/relevance.js';
import { MODEL } from './local/relevance-model.js';
import { DEFAULT_SUMMARY, extractiveSummary, type SummaryOptions } from './local/summary.js';
import type { AgentModelStep, AgentStepPrompt, CallOptions, RoleModels, Role } from './roles.js';
import type {
  CompactRequest,
  CompactResult,
  ExtractRequest,
  ExtractResult,
  OrchestrateRequest,
  PartialSelection,
} from '../contract/activity-contract.js';
import type { RelevanceRequest, RelevanceScores } from '../contract/relevance.js';

export interface LocalModelsOptions {
  /** Most retrieval terms per task. */
  maxTerms?: number;
  orchestration?: Partial<OrchestrationOptions>;
  summary?: Partial<SummaryOptions>;
}

/** The one sentence a user sees when a turn is skipped offline. */
export const LOCAL_AGENT_SKIPPED =
  'The local provider has no agent model, so no reply or tool call was made; set OPENAI_API_KEY (or OPENAI_BASE_URL) and HARNESS_AGENT_MODEL to run the agent.';

/** Runs `fn` and reports its result or its exception as a promise, like a model call would. */
function settle<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}

export class LocalModels implements RoleModels {
  private readonly maxTerms: number;
  private readonly orchestration: OrchestrationOptions;
  private readonly summary: SummaryOptions;

  constructor(options: LocalModelsOptions = {}) {
    this.maxTerms = options.maxTerms ?? 12;
    this.orchestration = { ...DEFAULT_ORCHESTRATION, ...options.orchestration };
    this.summary = { ...DEFAULT_SUMMARY, ...options.summary };
  }

  describe(): Record<Role, string> {
    return {
      relevance: MODEL.version,
      extraction: 'local/keywords-v1',
      orchestration: 'local/score-floor-v1',
      compaction: 'local/extractive-v1',
      agent: 'none (local provider has no agent model)',
    };
  }

  /** Resource references are not read: the local scorer judges the message text against the goals. */
  relevance(request: RelevanceRequest, _call?: CallOptions): Promise<RelevanceScores> {
    return settle(() => {
      const { phaseRelevance, sessionRelevance } = scoreRelevance({
        message: request.message.text,
        phaseGoal: request.phaseGoal,
        sessionGoal: request.sessionGoal,
      });
      return { phaseRelevance, sessionRelevance };
    });
  }

  extract(request: ExtractRequest, _call?: CallOptions): Promise<ExtractResult> {
    return settle(() => ({ terms: extractKeywords(request.task, this.maxTerms) }));
  }

  orchestrate(request: OrchestrateRequest, _call?: CallOptions): Promise<PartialSelection> {
    return settle(() => orchestrateLocally(request, this.orchestration));
  }

  compact(request: CompactRequest, _call?: CallOptions): Promise<CompactResult> {
    return settle(() => {
      const summary = extractiveSummary(request, this.summary);
      if (summary === undefined) {
        // Nothing but acknowledgements: keep the phase uncompacted rather than invent a summary.
        throw ApplicationFailure.nonRetryable(
          'compaction: the phase has no content to summarise',
          FAILURE.ModelInvalidOutput,
        );
      }
      return { summary };
    });
  }

  agentStep(_prompt: AgentStepPrompt, _call?: CallOptions): Promise<AgentModelStep> {
    return Promise.resolve({ kind: 'skipped', reason: LOCAL_AGENT_SKIPPED });
  }
}
