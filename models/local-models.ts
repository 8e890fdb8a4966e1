/**
 * RoleModels without a model: the `local` provider, used when no OpenAI-compatible endpoint is
 * configured. Deterministic and offline, built on wink-nlp, jieba and stopword (see
 * `models/local/`): relevance from lexical similarity, a bilingual concept lexicon and English word
 * vectors plus documented discourse rules (docs/relevance.md),
 * extraction by keyword extraction, orchestration by a score floor over the recall candidates,
 * compaction by an extractive summary. It has no agent model, so it never writes a reply.
 */
import { taskStatement } from '../contract/goals.js';
import { FAILURE } from '../contract/failures.js';
import { deterministicHandoff, isPhaseRecord, renderHandoff } from '../contract/handoff.js';
import { ApplicationFailure } from '@temporalio/common';
import {
  runLocalRole,
  type LocalRoleResults,
  type LocalRoleSettings,
  type LocalRoleTask,
} from './local/local-roles.js';
import { DEFAULT_ORCHESTRATION, type OrchestrationOptions } from './local/orchestrate.js';
import { MODEL } from './local/relevance-model.js';
import { ScoringPool } from './local/scoring-pool.js';
import { DEFAULT_SUMMARY, type SummaryOptions } from './local/summary.js';
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
  /**
   * Worker threads that run the roles (scoring-pool.ts); 0 runs them on the calling thread, which
   * then is busy for as long as a message takes to analyse. The worker uses a pool
   * (`HARNESS_LOCAL_THREADS`); tests and `harness eval` run in-thread.
   */
  threads?: number;
}

/** The one sentence a user sees when a turn is skipped offline. */
export const LOCAL_AGENT_SKIPPED =
  'The local provider has no agent model, so no reply or tool call was made; set OPENAI_API_KEY (or OPENAI_BASE_URL) and HARNESS_AGENT_MODEL to run the agent.';

export class LocalModels implements RoleModels {
  private readonly settings: LocalRoleSettings;
  private readonly pool: ScoringPool | undefined;

  constructor(options: LocalModelsOptions = {}) {
    this.settings = {
      maxTerms: options.maxTerms ?? 12,
      orchestration: { ...DEFAULT_ORCHESTRATION, ...options.orchestration },
      summary: { ...DEFAULT_SUMMARY, ...options.summary },
    };
    this.pool = options.threads ? new ScoringPool(options.threads) : undefined;
  }

  /** The scoring threads' ids; empty when the roles run on the calling thread. */
  threadIds(): number[] {
    return this.pool?.threadIds() ?? [];
  }

  /** Resolves once the scoring threads have loaded their models; at once without a pool. */
  ready(): Promise<void> {
    return this.pool?.ready() ?? Promise.resolve();
  }

  /** Stops the scoring threads, if any. */
  close(): Promise<void> {
    return this.pool?.close() ?? Promise.resolve();
  }

  /** Runs a role in the pool, or here; either way its exception arrives as a rejection, like a model call's. */
  private run<T extends LocalRoleTask>(task: T, call?: CallOptions): Promise<LocalRoleResults[T['role']]> {
    // No tokens: the call is recorded under the model name `local`, with its latency and no cost.
    call?.onUsage?.({ model: 'local', promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: 0 });
    if (this.pool) return this.pool.run(task, this.settings, call);
    return new Promise((resolve) => resolve(runLocalRole(task, this.settings)));
  }

  describe(): Record<Role, string> {
    return {
      relevance: MODEL.version,
      extraction: 'local/keywords-v1',
      orchestration: 'local/score-floor-v1',
      // A phase gets the deterministic hand-off; loose transcript lines an extractive summary.
      compaction: 'local/handoff-v1 + extractive-v1',
      agent: 'none (local provider has no agent model)',
    };
  }

  /** Resource references are not read: the local scorer judges the message text against the goals. */
  relevance(request: RelevanceRequest, call?: CallOptions): Promise<RelevanceScores> {
    return this.run({ role: 'relevance', request }, call);
  }

  /** The terms of the local scorer, and the message's deterministic task statement (null for none). */
  async extract(request: ExtractRequest, call?: CallOptions): Promise<ExtractResult> {
    const { terms } = await this.run({ role: 'extraction', request }, call);
    return { terms, goal: taskStatement(request.task.message) || null };
  }

  orchestrate(request: OrchestrateRequest, call?: CallOptions): Promise<PartialSelection> {
    return this.run({ role: 'orchestration', request }, call);
  }

  /** A phase record gets the deterministic hand-off (nothing to guess offline); loose transcript lines an extractive summary. */
  async compact(request: CompactRequest, call?: CallOptions): Promise<CompactResult> {
    if (isPhaseRecord(request)) {
      const handoff = deterministicHandoff(request);
      return { summary: renderHandoff(request.phaseGoal, handoff), handoff };
    }
    const { summary } = await this.run({ role: 'compaction', request }, call);
    if (summary === undefined) {
      // Nothing but acknowledgements: keep the phase uncompacted rather than invent a summary.
      throw ApplicationFailure.nonRetryable(
        'compaction: the phase has no content to summarise',
        FAILURE.ModelInvalidOutput,
      );
    }
    return { summary };
  }

  agentStep(_prompt: AgentStepPrompt, _call?: CallOptions): Promise<AgentModelStep> {
    return Promise.resolve({ kind: 'skipped', reason: LOCAL_AGENT_SKIPPED });
  }
}
