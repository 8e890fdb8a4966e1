/**
 * Inputs and outputs of the Session's activities. Types only: workflow code imports this file to
 * type its activity proxies, and each role's input allows exactly what that role may see.
 */
import type { Candidates, PartialSelection } from './capabilities.js';
import type { RelevanceScores } from './decide.js';
import type { ResourceRef, Settings } from './schemas.js';
import type { Cap, Decision } from './state.js';

/** What the relevance role may see: the message, its resource refs and the two goals. Nothing else. */
export interface RelevanceRequest {
  message: { text: string; resources: ResourceRef[] };
  phaseGoal: string;
  sessionGoal: string;
}

/** The task after alignment: the goals it now serves and the input that led there. */
export interface AlignedTask {
  sessionGoal: string;
  phaseGoal: string;
  message: string;
  resources: ResourceRef[];
}

export interface ExtractRequest {
  task: AlignedTask;
}
export interface ExtractResult {
  terms: string[];
}

export interface RecallRequest {
  sessionId: string;
  /** Retrieval terms; empty when extraction failed, in which case `text` is searched instead. */
  terms: string[];
  text: string;
  userId?: string;
}

export type OrchestrationMode = 'init' | 'reconcile';

export interface OrchestrateRequest {
  task: AlignedTask;
  mode: OrchestrationMode;
  current: { skills: Cap[]; toolsets: Cap[]; memories: Cap[] };
  candidates: Candidates;
}

export interface CompactRequest {
  phaseGoal: string;
  inputs: string[];
}
export interface CompactResult {
  summary: string;
}

export interface AgentTurnRequest {
  sessionId: string;
  goals: { session: string; phase: string };
  decision: Decision;
  message: { text: string; resources: ResourceRef[] };
  skills: string[];
  toolsets: string[];
  memories: string[];
}
export type AgentTurnResult = { reply: string } | { skipped: string };

/** `session_create_sub`: start a Session for an out-of-scope request and hand it the message verbatim. */
export interface CreateSubRequest {
  parentSessionId: string;
  taskQueue: string;
  profile: string;
  settings: Settings;
  message: { messageId: string; text: string; resources: ResourceRef[] };
  /** The request's de-duplication key in the parent (its messageId, or origin and messageId if handed over). */
  requestKey?: string;
}
export interface CreateSubResult {
  sessionId: string;
}

/** Every activity the Session workflow schedules. */
export interface SessionActivities {
  relevance(request: RelevanceRequest): Promise<RelevanceScores>;
  extractTerms(request: ExtractRequest): Promise<ExtractResult>;
  recall(request: RecallRequest): Promise<Candidates>;
  orchestrate(request: OrchestrateRequest): Promise<PartialSelection>;
  compact(request: CompactRequest): Promise<CompactResult>;
  agentTurn(request: AgentTurnRequest): Promise<AgentTurnResult>;
  createSubSession(request: CreateSubRequest): Promise<CreateSubResult>;
}
