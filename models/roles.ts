/**
 * The narrow interface between activities and whatever model serves each role, and the output
 * contract of every role. Providers (OpenAI-compatible HTTP, local) implement RoleModels.
 */
import type {
  PartialSelection,
  CompactRequest,
  CompactResult,
  ExtractRequest,
  ExtractResult,
  OrchestrateRequest,
} from '../contract/activity-contract.js';
import type { Artifact, Decision } from '../contract/state.js';
import type { RelevanceRequest, RelevanceResult, RelevanceScores } from '../contract/relevance.js';
import type { ResolvedToolCall, TranscriptItem } from '../contract/transcript.js';

export const ROLES = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'] as const;
export type Role = (typeof ROLES)[number];

/** Per-call limits handed down from the activity context. */
export interface CallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Told what a call used, once its answer arrives (before the answer is parsed, so invalid output counts too). */
  onUsage?: (usage: CallUsage) => void;
  /**
   * Told each piece of the agent's text as the model streams it (providers that stream; the local
   * provider does not). The step's answer still carries the whole text.
   */
  onText?: (piece: string) => void;
}

/** What one model call used, as its provider reports it (`cachedTokens` within prompt, `reasoningTokens` within completion). */
export interface CallUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

/** A tool as the agent model is offered it: the name the model calls, and where the call goes. */
export interface AgentToolSpec {
  /** The OpenAI function name: the tool's own name, made unique and safe for `^[a-zA-Z0-9_-]{1,64}$`. */
  functionName: string;
  /** The tool's name as its toolset (or MCP server) declares it. */
  tool: string;
  toolset: string | null;
  description: string;
  inputSchema: Record<string, unknown>;
  execution: ResolvedToolCall['execution'];
  requiresApproval: boolean;
}

/** What one agent step is given: the facts the workflow passed, with every id resolved to content. */
export interface AgentStepPrompt {
  sessionId: string;
  goals: { session: string; phase: string };
  decision: Decision;
  summaries: Array<{ phaseIndex: number; goal: string; summary: string }>;
  /** What the Session's tool calls produced or named, oldest first (none when absent). */
  artifacts?: Artifact[];
  transcript: TranscriptItem[];
  skills: Array<{ id: string; name: string; instructions: string }>;
  memories: Array<{ id: string; text: string }>;
  tools: AgentToolSpec[];
  step: number;
}

/** The agent model's answer to one step, before the worker resolves the calls. */
export type AgentModelStep =
  | { kind: 'reply'; text: string }
  /** `name` is the function name the model called (see AgentToolSpec.functionName). */
  | {
      kind: 'calls';
      text: string | null;
      calls: Array<{ callId: string; name: string; arguments: string }>;
      /** The model's reasoning beside the calls (`reasoning_content`), when the provider returned any. */
      reasoning?: string;
    }
  | { kind: 'skipped'; reason: string };

export interface RoleModels {
  relevance(request: RelevanceRequest, call: CallOptions): Promise<RelevanceScores>;
  /**
   * Relevance and the message's task terms in one model call (combined understanding), under the
   * relevance role's model. Optional: a provider without a round trip to save (the local one) leaves
   * it out, and the worker then judges relevance alone and extracts terms in their own call.
   */
  understand?(request: RelevanceRequest, call: CallOptions): Promise<RelevanceResult>;
  extract(request: ExtractRequest, call: CallOptions): Promise<ExtractResult>;
  orchestrate(request: OrchestrateRequest, call: CallOptions): Promise<PartialSelection>;
  compact(request: CompactRequest, call: CallOptions): Promise<CompactResult>;
  /** One step of the inner loop: a reply, tool calls, or `skipped` when there is no agent model. */
  agentStep(prompt: AgentStepPrompt, call: CallOptions): Promise<AgentModelStep>;
  /** `provider/model` per role, for the worker's start-up log. */
  describe(): Record<Role, string>;
}
