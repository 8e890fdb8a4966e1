/**
 * The narrow interface between activities and whatever model serves each role, and the output
 * contract of every role. Providers (OpenAI-compatible HTTP, local) implement RoleModels.
 */
import type { PartialSelection } from '../workflows/capabilities.js';
import type { RelevanceScores } from '../workflows/decide.js';
import type { ResourceRef } from '../workflows/schemas.js';
import type { Decision } from '../workflows/state.js';
import {
  CompactionOutput,
  ExtractionOutput,
  OrchestrationOutput,
  RelevanceOutput,
  type CompactRequest,
  type CompactResult,
  type ExtractRequest,
  type ExtractResult,
  type OrchestrateRequest,
  type RelevanceRequest,
} from '../workflows/activity-contract.js';

export const ROLES = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'] as const;
export type Role = (typeof ROLES)[number];

export { CompactionOutput, ExtractionOutput, OrchestrationOutput, RelevanceOutput };

/** Per-call limits handed down from the activity context. */
export interface CallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/** What the business agent is given: the aligned state and the loaded capabilities, resolved. */
export interface AgentPrompt {
  sessionId: string;
  goals: { session: string; phase: string };
  decision: Decision;
  message: { text: string; resources: ResourceRef[] };
  skills: Array<{ id: string; name: string; instructions: string }>;
  tools: Array<{ toolset: string; name: string; description: string; requiresApproval: boolean }>;
  memories: Array<{ id: string; text: string }>;
}

export interface RoleModels {
  relevance(request: RelevanceRequest, call: CallOptions): Promise<RelevanceScores>;
  extract(request: ExtractRequest, call: CallOptions): Promise<ExtractResult>;
  orchestrate(request: OrchestrateRequest, call: CallOptions): Promise<PartialSelection>;
  compact(request: CompactRequest, call: CallOptions): Promise<CompactResult>;
  agent(prompt: AgentPrompt, call: CallOptions): Promise<{ reply: string } | { skipped: string }>;
  /** `provider/model` per role, for the worker's start-up log. */
  describe(): Record<Role, string>;
}
