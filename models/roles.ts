/**
 * The narrow interface between activities and whatever model serves each role, and the output
 * contract of every role. Providers (OpenAI-compatible HTTP, local) implement RoleModels.
 */
import { z } from 'zod';
import type { PartialSelection } from '../workflows/capabilities.js';
import { SelectionSchema } from '../workflows/capabilities.js';
import type { RelevanceScores } from '../workflows/decide.js';
import type { ResourceRef } from '../workflows/schemas.js';
import type { Decision } from '../workflows/state.js';
import type {
  CompactRequest,
  CompactResult,
  ExtractRequest,
  ExtractResult,
  OrchestrateRequest,
  RelevanceRequest,
} from '../workflows/activity-contract.js';

export const ROLES = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'] as const;
export type Role = (typeof ROLES)[number];

export const RelevanceOutput = z
  .object({
    phaseRelevance: z.number().min(0).max(1),
    sessionRelevance: z.number().min(0).max(1),
  })
  .strip();

export const ExtractionOutput = z.object({
  terms: z
    .array(z.string())
    .max(64)
    .transform((terms) => [...new Set(terms.map((t) => t.trim()).filter((t) => t.length > 0 && t.length <= 80))]),
});

export const OrchestrationOutput = SelectionSchema;

export const CompactionOutput = z.object({ summary: z.string().trim().min(1) });

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
